package dialog

// Change tracking: which Call-IDs changed since a reader last asked, so a
// reader that keeps its own state per dialog (core/query's maintained rows,
// diagnoses and aggregates) recomputes the dialogs that changed instead of
// reading the whole store again. Off until a reader calls TrackChanges: the
// message path then pays one branch per message.

// changeLog lists the dialogs changed since the last DrainChanges, each
// once (dialog.logged).
type changeLog struct {
	on bool
	ds []*dialog
	// overflow: more dialogs changed than maxChangeLog since the last
	// drain (nobody drained for a long time, or a flood); the list was
	// dropped and the reader must read every dialog again.
	overflow bool
	// att is the reader's state kept with the store (Attachment).
	att any
	// wake receives a value when the list reaches wakeAt dialogs
	// (WakeOnChanges); nil until a reader asks.
	wake   chan struct{}
	wakeAt int
}

// maxChangeLog bounds the change list in dialogs: past it (two store caps
// of changes nobody drained) the list is dropped and the next drain says
// so, so a reader that stopped asking costs a bounded amount of memory.
func (s *Store) maxChangeLog() int { return 2 * s.cfg.MaxDialogs }

// TrackChanges turns change tracking on (idempotent). Every dialog that
// opens, changes, sees a capture duplicate or leaves the store from now on
// is listed for DrainChanges.
func (s *Store) TrackChanges() {
	s.mu.Lock()
	s.chg.on = true
	s.mu.Unlock()
}

// noteChange lists d as changed; called under the write lock.
func (s *Store) noteChange(d *dialog) {
	if !s.chg.on || d.logged {
		return
	}
	if len(s.chg.ds) >= s.maxChangeLog() {
		for _, x := range s.chg.ds {
			x.logged = false
		}
		clear(s.chg.ds)
		s.chg.ds = s.chg.ds[:0]
		s.chg.overflow = true
	}
	d.logged = true
	s.chg.ds = append(s.chg.ds, d)
	if len(s.chg.ds) == s.chg.wakeAt && s.chg.wake != nil {
		select {
		case s.chg.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// WakeOnChanges returns a channel that receives a value when n dialogs
// have changed since the last drain: once per drain, and never blocking the
// writer (the channel holds one pending wake-up). A reader that applies the
// changes in the background (core/query's catch-up) waits on it instead of
// polling. A store has one such channel: a later call returns it with the
// new n.
func (s *Store) WakeOnChanges(n int) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chg.wake == nil {
		s.chg.wake = make(chan struct{}, 1)
	}
	s.chg.wakeAt = max(n, 1)
	return s.chg.wake
}

// DrainChanges appends to dst the Call-IDs of the dialogs changed since the
// last drain (each once; one that left the store is listed too, and a
// Call-ID may be listed again if it opened anew), forgets them, and
// returns dst with the store's revision at the drain: every change up to
// that revision is in this or an earlier drain. all is true when the list
// overflowed (see changeLog): every dialog must be read again.
func (s *Store) DrainChanges(dst []string) (ids []string, rev uint64, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range s.chg.ds {
		dst = append(dst, d.callID)
		d.logged = false
		s.chg.ds[i] = nil
	}
	s.chg.ds = s.chg.ds[:0]
	all, s.chg.overflow = s.chg.overflow, false
	return dst, s.rev.Load(), all
}

// Change is one dialog of the change log (DrainChangeSet).
type Change struct {
	CallID string
	// Gone: that dialog had left the store (evicted or dropped) by the
	// drain. A Call-ID that opened anew is listed again for the new
	// dialog, not Gone, at or after its old dialog's entry.
	Gone bool
}

// DrainChangeSet is DrainChanges that also says which of the dialogs have
// left the store, so a reader drops those without looking them up (an
// eviction batch lists MaxDialogs/100 at once).
func (s *Store) DrainChangeSet(dst []Change) (changes []Change, rev uint64, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, d := range s.chg.ds {
		dst = append(dst, Change{CallID: d.callID, Gone: d.gone})
		d.logged = false
		s.chg.ds[i] = nil
	}
	s.chg.ds = s.chg.ds[:0]
	all, s.chg.overflow = s.chg.overflow, false
	return dst, s.rev.Load(), all
}

// RowExtra returns the row and the Extra of one Call-ID read in one hold
// of the read lock (what core/query keeps per dialog); false when the
// store does not hold it.
func (s *Store) RowExtra(callID string) (Summary, Extra, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.lookup(callID)
	if d == nil {
		return Summary{}, Extra{}, false
	}
	return d.summary(), d.extra(), true
}

// Attachment returns the value kept with the store for its change reader
// (core/query's maintained state), made by mk on the first call. It lives
// and dies with the store, and a store has one: two readers draining one
// change log would each miss the other's changes.
func (s *Store) Attachment(mk func() any) any {
	s.mu.RLock()
	v := s.chg.att
	s.mu.RUnlock()
	if v != nil {
		return v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chg.att == nil {
		s.chg.att = mk()
	}
	return s.chg.att
}
