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
