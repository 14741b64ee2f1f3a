package trial

// CheckpointStoreKey (promotion "continue" with the fidelity setting
// checkpoint_store, bench only) is the s3:// store the trial's checkpoint
// travels through: wherever the trial runs, its runner fills a fresh local
// checkpoint directory (CheckpointDirKey) from the archive of the trial it
// continues (ContinueFromKey) before the run, and archives the directory
// back to the store under its own trial id after it
// (engines.StageCheckpoint).
const CheckpointStoreKey = "bench_checkpoint_store"
