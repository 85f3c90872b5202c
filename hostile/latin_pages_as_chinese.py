"""Latin-1/windows-1252 pages in European languages under a Latin label: are any read as GB18030/Big5?"""

from simhash_store.html import decode_page

TEXTS = {
    "finnish": "Hyvää päivää! Tämä on pääkaupunkiseudun sää tänään. Jäätelö ja kääretorttu ovat "
    "hyvää. Äänestäjät päättävät vääjäämättä, että pöytä on tyhjä. Hää, tyttö, lähteä, lääkäri, "
    "mää, pää, syöjä, työläinen, kesäpäivä, äiti, öisin, yöllä, köyhä, pöljä, häät, pyörä.",
    "estonian": "Jäätis on väga hää. Öö oli pime ja jää oli õhuke. Õõnes puu, pööre, vääramatu, "
    "jäärapäine, müüa, tööõhtu, sõõm, nõõ, kõõlus, säästa, pääsuke, hüüe, müüja, püüa.",
    "german": "Größere Übergrößen für Grüße. Die Schlüsselübergabe erfolgt später. Äußerst "
    "schön, Straße, Fußgängerübergänge, Öffnungszeiten, müßig, Übelkeit, Gemüseküche.",
    "portuguese": "A informação sobre a população e as condições de habitação. As eleições, "
    "as instituições, a educação, a produção, a situação, as ações, os corações, as canções, "
    "as estações, as nações, as operações, a atenção, a direção, a solução.",
    "french": "« Bonjour », dit l’été. C’est là qu’à l’époque où l’œuvre d’être… « Très bien » "
    "— répondit-il. L’île, l’hôpital, l’Élysée, l’écrivain, d’où, qu’à, l’âme, l’événement.",
    "danish": "Æbleskiver og rødgrød med fløde. Ærø, Ålborg, æøå, blåbær, sø, ø, på, går, "
    "kærlighed, hæftet, højt, møde, Ærøskøbing, Bøgeskov, frøkenen, øjeblikket, smørrebrød.",
    "icelandic": "Þjóðhátíð, Íslendingar, Æðarfugl, Þórður, fjörður, Þingvellir, jökull, "
    "heiðarleiki, hálsbólga, Þúsund, sjálfstæði, Guðríður, Þórshöfn, mæður, bæði, ráðuneyti.",
    "swedish": "Åsa åt räkor på Öland. Häst, äpple, sjö, kött, höst, Ärlighet, Östersjön, åäö, "
    "Malmö, Göteborg, Västerås, Jönköping, Linköping, Örebro, Gävle, Umeå, Skövde.",
    "spanish": "El niño comió piñas en el año pasado. ¿Qué pasó? ¡Qué sorpresa! Camión, "
    "corazón, canción, información, ¿Dónde está? ¡Olé! «Señor», dijo él. Añoranza, pequeño.",
    "dutch": "Café, één, tweeëntwintig, reünie, coördinatie, ideeën, zeeën, financiële, "
    "geïnteresseerd, naïef, België, patiënt, knieën, drieëndertig, beïnvloed, geëerd.",
    "nbsp_layout": "Home\xa0\xa0\xa0\xa0|\xa0\xa0\xa0\xa0About\xa0\xa0\xa0\xa0|\xa0\xa0Contact "
    "© 2024\xa0\xa0All rights reserved\xa0\xa0\xa0\xa0Terms\xa0\xa0\xa0\xa0Privacy",
    "quotes": "He said “hello” — and ‘goodbye’… ”Quote“ »Zitat« „Anführung“ – ­ ™ ® © “—” “…” ’’ ‘‘ ««»» ·· ••",
    "upper_finnish": "HYVÄÄ PÄIVÄÄ! TÄMÄ ON PÄÄKAUPUNKISEUDUN SÄÄ TÄNÄÄN. JÄÄTELÖ JA "
    "KÄÄRETORTTU OVAT HYVÄÄ. ÄÄNESTÄJÄT PÄÄTTÄVÄT VÄÄJÄÄMÄTTÄ. HÄÄT, LÄÄKÄRI, PÄÄ, SYÖJÄ.",
}

if __name__ == "__main__":
    for label in ("iso-8859-1", "windows-1252", "iso-8859-15"):
        for name, text in TEXTS.items():
            for repeat in (1, 5):
                body = " ".join([text] * repeat)
                try:
                    raw = body.encode("cp1252")
                except UnicodeEncodeError:
                    raw = body.encode("latin-1", "replace")
                page = (
                    b'<html><head><meta charset="'
                    + label.encode()
                    + b'"></head><body><p>'
                    + raw
                    + b"</p></body></html>"
                )
                result = decode_page(page)
                flag = "MISREAD" if result.encoding in ("gb18030", "big5") else "ok"
                print(f"{flag:8} {label:13} {name:14} x{repeat} -> {result.encoding}  {result.text[60:100]!r}")
