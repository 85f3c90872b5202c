"""A UTF-8 page declaring <meta charset=cp037> (EBCDIC): read as other characters throughout
before the fix. Usage: .venv/bin/python hostile/ebcdic_meta_charset.py"""

from simhash_store.html import decode_page

text = "中华人民共和国刑法第一条：为了惩罚犯罪，保护人民，根据宪法，制定本法。" * 5
page = f"<html><head><meta charset=cp037><title>x</title></head><body><p>{text}</p></body></html>".encode()
decoded = decode_page(page)
print(decoded.encoding, decoded.source, repr(decoded.text[60:80]))
