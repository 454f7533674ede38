#!/usr/bin/env bash
# The synthetic study of docs/study.md: every participant of PROTOCOL played by a
# scripted participant in Chromium, one after another; run again, it resumes where it
# stopped (finished participants are skipped). Then it exports the study to OUT/dataset;
# the re-estimation (long: every hypothesis's plans) is the command it prints.
#   bash bench/synthetic_study.sh PROTOCOL OUT BEHAVIOUR[,BEHAVIOUR...]
# Several behaviours take turns: the first participant plays the first, the second the
# second, and so on (docs/results/study/overcooked_two_families: greedy,satisficing).
set -euo pipefail
protocol=${1:-docs/results/study/overcooked_scripted/protocol.yaml}
out=${2:-studies}
behaviour=${3:-noisy:0.2}
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
participants=$(.venv/bin/python -c "import sys; from cecm_ros.study.protocol import load_protocol; print(' '.join(load_protocol(sys.argv[1]).participants))" "$protocol")
IFS=, read -r -a behaviours <<< "$behaviour"
turn=0
for participant in $participants; do
  chosen=${behaviours[$((turn % ${#behaviours[@]}))]}
  turn=$((turn + 1))
  echo "[synthetic study] $participant, $chosen ($(date +%T))"
  .venv/bin/cecm study run "$protocol" --participant "$participant" --scripted "$chosen" \
    --scripted-seed 0 --out "$out"
done
name=$(.venv/bin/python -c "import sys; from cecm_ros.study.protocol import load_protocol; print(load_protocol(sys.argv[1]).name)" "$protocol")
.venv/bin/cecm study export --study "$out/$name" --protocol "$protocol" --out "$out/dataset" --overwrite
echo "[synthetic study] re-estimate: .venv/bin/cecm estimate --from-dataset $out/dataset --method paper,cecm_div,posterior --out $out/estimate"
