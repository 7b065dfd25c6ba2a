#!/bin/bash
# CLI outputs and exit codes of a few quick commands, timings, paths and issue times masked: run once per tree
# (PYTHONPATH=OLD tools/compare_cli.sh > a.txt; PYTHONPATH=. tools/compare_cli.sh > b.txt; diff a.txt b.txt).
PY=/work/main/.venv/bin/python
D=${COMPARE_DIR:-/tmp/sigmacert-compare}; mkdir -p $D
K=$D/key; [ -d $K ] || $PY -m sigmacert keygen -o $K >/dev/null
run() { echo "### $*"; $PY -m sigmacert "$@" 2>&1 | sed -E 's/"predicted_seconds": [0-9.]+, "predicted_steps": \{[^}]*\}/PREDICTED/; s/issued [0-9TZ:-]+,/issued X,/; s/[0-9.]+ s\)/X s)/g; s/"(seconds|lower_seconds|issued_at)": [^,}]*/"\1": X/g; s#[^ "]*/out[0-9][.]json#OUT#g'; echo "exit ${PIPESTATUS[0]}"; }
rm -f $D/out*.json
run sigma -M 10 -E 2 --epsilon 1 --delta 1e-3
run sigma -M 10 -E 2 --fpr 0.01 --tpr 0.3 --json
run sigma --stages 4x2,8x1 --epsilon 1 --delta 0.01
run sigma --stages 4x2,8x1 --fpr 0.01 --tpr 0.3 --json
run sigma -M 10 -E 2 --epsilon 1
run sigma -M 10 -E 2 --target 0.1 --epsilon 1 --delta 0.1
run dp -M 10 -E 2 --sigma 1.5 --epsilon 1 --delta 1e-3 --fpr 0.01
run dp --stages 4x2@1.5,8x1@1.6 --epsilon 1 --delta 1e-3 --fpr 0.01 --json
run certify -M 10 -E 2 --target 0.3 --sigma 1.2 --key $K/private.pem -o $D/out1.json --quiet
run certify -M 10 -E 2 --epsilon 1 --delta 0.05 --sigma 1.5 --key $K/private.pem -o $D/out2.json --quiet --json
run certify --stages 4x2,8x1 --fpr 0.01 --tpr 0.2 --sigma 1.5 --key $K/private.pem -o $D/out3.json --quiet
run certify --stages 4x2@1.2,8x1@1.3 --target 0.3 --key $K/private.pem -o $D/out4.json --quiet --json
run certify -M 1 -E 3 --target 0.3 --sigma 2 --key $K/private.pem -o $D/out5.json --quiet
run certify --stages 4x2 --target 0.3 --h 0.1 --key $K/private.pem -o $D/out6.json --quiet
run show $D/out2.json
run show $D/out3.json --json
