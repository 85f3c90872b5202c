"""A GB2312 page (meta charset=gb2312) served with a server's default `charset=ISO-8859-1`
header, as old Chinese sites in WARC crawls often are: read as Latin letters before the fix.
Usage: .venv/bin/python hostile/latin1_header_over_gbk_page.py"""

from simhash_store import fingerprint
from simhash_store.html import decode_page, extract

article = "<p>" + "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，制定本法。" * 10 + "</p>"
page = f'<html><head><meta charset="gb2312"></head><body>{article}</body></html>'.encode("gbk")
decoded = decode_page(page, "text/html; charset=ISO-8859-1")
print(decoded.encoding, decoded.source, decoded.text[40:70])
served, saved = extract(page, "text/html; charset=ISO-8859-1").text, extract(page).text
print("same fingerprint as the saved page:", fingerprint(served) == fingerprint(saved))
