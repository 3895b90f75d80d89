package media

// Change tracking: which dialogs' media changed since a reader last asked,
// so a reader that keeps a diagnosis per dialog (core/query) recomputes
// only those. Off until a reader calls TrackChanges; an RTP packet then
// costs one comparison (its stream is listed once per drain).

// changeLog lists what changed since the last DrainChanges.
type changeLog struct {
	// epoch is 0 while tracking is off (every stream's mark is 0 too, so
	// nothing is listed); a drain moves it, so every stream's mark is
	// stale again and its next change lists it anew.
	epoch   uint64
	streams []*stream // changed streams, each once per epoch (stream.mark)
	calls   []string  // dialogs whose SDP endpoints changed
	all     bool      // every dialog's media may have changed (a merge)
}

// maxCallMarks bounds calls between drains; past it the list is dropped
// and the drain reports all.
const maxCallMarks = 1 << 20

// TrackChanges turns change tracking on (idempotent).
func (st *Store) TrackChanges() {
	st.mu.Lock()
	if st.chg.epoch == 0 {
		st.chg.epoch = 1
	}
	st.mu.Unlock()
}

// markStream lists s as changed (under the write lock).
func (st *Store) markStream(s *stream) {
	if s.mark == st.chg.epoch {
		return
	}
	s.mark = st.chg.epoch
	st.chg.streams = append(st.chg.streams, s)
}

// markCall lists a dialog whose SDP endpoints changed (under the write
// lock).
func (st *Store) markCall(callID string) {
	if st.chg.epoch == 0 || callID == "" {
		return
	}
	if len(st.chg.calls) >= maxCallMarks {
		clear(st.chg.calls)
		st.chg.calls = st.chg.calls[:0]
		st.chg.all = true
		return
	}
	st.chg.calls = append(st.chg.calls, callID)
}

// DrainChanges appends to dst the Call-IDs whose streams or SDP endpoints
// changed since the last drain (a Call-ID may appear more than once), and
// forgets them. all is true when every dialog's media may have changed
// (the store merged other stores, or the list overflowed).
func (st *Store) DrainChanges(dst []string) (ids []string, all bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.chg.epoch == 0 {
		return dst, false
	}
	for i, s := range st.chg.streams {
		if s.callID != "" {
			dst = append(dst, s.callID)
		}
		dst = append(dst, s.shared...)
		st.chg.streams[i] = nil
	}
	st.chg.streams = st.chg.streams[:0]
	dst = append(dst, st.chg.calls...)
	clear(st.chg.calls)
	st.chg.calls = st.chg.calls[:0]
	all, st.chg.all = st.chg.all, false
	st.chg.epoch++
	return dst, all
}
