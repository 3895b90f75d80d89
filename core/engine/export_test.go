package engine

// SetSIPBatch sets the SIP pipeline's batch bounds (sipshard.go) for a
// test and returns what restores them. Not for parallel tests.
func SetSIPBatch(items, arena int) (restore func()) {
	oi, oa := sipBatchItems, sipBatchArena
	sipBatchItems, sipBatchArena = items, arena
	return func() { sipBatchItems, sipBatchArena = oi, oa }
}

// SIPWorkerBatches counts the batches the SIP pipeline's workers parsed
// since the process started.
func SIPWorkerBatches() uint64 { return sipWorkerBatches.Load() }
