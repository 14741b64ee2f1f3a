#!/bin/sh
# A stand-in for a training run whose cost grows with its fidelity
# ($epochs, epoch_s seconds each) and that can resume: when bench says the
# trial continues an earlier one (BENCH_CONTINUE_FROM_TRIAL, promotion
# "continue"), it starts from the epoch its checkpoint in
# BENCH_CHECKPOINT_DIR recorded, so a promotion from 9 to 27 epochs costs
# 18. It writes results.csv: the loss after $epochs epochs (lower is
# better; the configuration's final loss plus a learning curve that fades
# with the epochs) and how many epochs this run trained.
set -eu
start=0
ckpt=${BENCH_CHECKPOINT_DIR:-}
if [ -n "$ckpt" ] && [ "${BENCH_CONTINUE_FROM_TRIAL:-0}" != 0 ] && [ -f "$ckpt/epochs_done" ]; then
    start=$(cat "$ckpt/epochs_done")
    echo "continuing trial $BENCH_CONTINUE_FROM_TRIAL from epoch $start"
fi
e=$start
while [ "$e" -lt "$epochs" ]; do
    sleep "$epoch_s" # one epoch of work
    e=$((e + 1))
done
if [ -n "$ckpt" ]; then
    # A checkpoint that cannot be saved (the folder not writable by this
    # user, say) is said, not skipped silently: a promotion then trains
    # from epoch 0, which costs time but not correctness.
    if ! { mkdir -p "$ckpt" && echo "$epochs" > "$ckpt/epochs_done.tmp" && mv "$ckpt/epochs_done.tmp" "$ckpt/epochs_done"; }; then
        echo "warning: could not save the checkpoint in $ckpt; a promotion of this trial will train from epoch 0" >&2
    fi
fi
awk -v lr="$learning_rate" -v layers="$layers" -v e="$epochs" -v start="$start" 'BEGIN {
    x = log(lr) / log(10) + 2.5              # best learning rate: about 0.003
    final = x * x + (layers - 7) ^ 2 / 8     # best: 7 layers
    curve = (3 + (layers % 4)) * exp(-e / (2 + 6 * lr))
    printf "loss,epochs_trained\n%.6f,%d\n", final + curve, e - start
}' > results.csv
