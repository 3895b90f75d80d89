package media

import (
	"cmp"
	"net/netip"
)

// Merge moves every stream, probation flow, SDP endpoint and counter of the
// other stores into st, for a multi-core run that sharded packets by host
// pair into per-worker stores (each worker must have seen every SDP, in
// order: the router hands OnSDP to all of them). A stream or probation key
// lives on one shard (its host pair's), so keys never collide; if one does,
// the entry already in st wins and the other is counted as evicted. Every
// shard saw the same SDP, so endpoints are taken once (from the first store
// holding each address) and their eviction count is the largest any store
// counted, not the sum. The other stores must not be used afterwards.
//
// Merged into an empty store, stores fed that way give the counters and
// streams one store fed every packet would hold, as long as no store
// reached its stream or probation cap (each shard applies the caps on its
// own).
//
// When st holds nothing yet, the largest other store is adopted whole (its
// tables move into st, nothing is copied) and the rest merged into it:
// the result is the one a merge would give, with each adopted stream and
// candidate keeping its ordinal (as one store fed every packet would number
// them when a single shard saw all of them), in time proportional to the
// smaller stores only.
func (st *Store) Merge(others ...*Store) {
	st.mu.Lock()
	if st.empty() {
		big := -1
		for i, o := range others {
			if o == nil || o == st || !sameCaps(o.cfg, st.cfg) {
				continue // (a store of other caps could hold more than st's)
			}
			if big < 0 || o.size() > others[big].size() {
				big = i
			}
		}
		if big >= 0 {
			st.adopt(others[big])
			others = append(others[:big:big], others[big+1:]...)
		}
	}
	for _, o := range others {
		if o == nil || o == st {
			continue
		}
		o.mu.Lock()
		for a := range o.epQ.all() {
			ep := o.eps.get(a)
			if ep == nil {
				continue
			}
			if cur := st.eps.get(a); cur == nil {
				if st.eps.len() >= st.cfg.MaxEndpoints {
					st.evictEndpoint()
				}
				st.eps.set(a, ep)
				st.epQ.push(a)
				st.addCallEndpoint(ep.callID, ep)
				for _, x := range ep.sharers {
					st.addCallEndpoint(x.callID, x.ep)
				}
			}
		}
		for _, s := range o.order[o.orderHd:] {
			if s == nil || o.lookup(s.key) != s {
				continue
			}
			if st.get(s.key) != nil {
				st.stats.StreamsEvicted++
				continue
			}
			if st.streams.len() >= st.cfg.MaxStreams {
				st.evictStream()
			}
			st.ordinal++
			s.ordinal = st.ordinal
			if s.ep != nil {
				// Rebind to this store's endpoint object for the address.
				if ep := st.eps.get(s.ep.addr); ep != nil && ep.callID == s.ep.callID {
					s.ep = ep
				}
			}
			st.streams.set(s.key, s)
			st.order = append(st.order, s)
			st.mergeAudio(s)
			st.bySSRC[s.key.SSRC] = append(st.bySSRC[s.key.SSRC], s)
			if s.key.Fax {
				st.faxes++
			}
			if s.callID != "" {
				st.byCall[s.callID] = append(st.byCall[s.callID], s)
				for _, c := range s.shared {
					st.byCall[c] = append(st.byCall[c], s)
				}
			} else {
				st.orphans++
				s.orphanIdx = true
				st.orphanEP[s.key.Src] = append(st.orphanEP[s.key.Src], s)
				st.orphanEP[s.key.Dst] = append(st.orphanEP[s.key.Dst], s)
			}
		}
		for _, k := range o.candQ[o.candHd:] {
			c, ok := o.cands.get(k)
			if !ok {
				continue
			}
			if _, dup := st.cands.get(k); dup {
				st.stats.CandidatesEvicted++
				continue
			}
			if st.cands.len() >= st.cfg.MaxCandidates {
				st.evictCandidate()
			}
			st.ordinal++
			c.ordinal = st.ordinal
			st.cands.set(k, c)
			st.candQ = append(st.candQ, k)
		}
		st.lastNs = max(st.lastNs, o.lastNs)
		os := o.stats
		st.stats.StreamsEvicted += os.StreamsEvicted
		st.stats.CandidatesEvicted += os.CandidatesEvicted
		st.stats.EndpointsEvicted = max(st.stats.EndpointsEvicted, os.EndpointsEvicted)
		st.stats.RTPPackets += os.RTPPackets
		st.stats.RTCPPackets += os.RTCPPackets
		st.stats.RTCPMalformed += os.RTCPMalformed
		st.stats.RTCPUnknownSSRC += os.RTCPUnknownSSRC
		st.stats.UDPTLPackets += os.UDPTLPackets
		st.stats.Rejected += os.Rejected
		st.mergeAudioStats(o)
		o.mu.Unlock()
	}
	st.chg.all = st.chg.epoch != 0 // every dialog's streams may have moved
	st.mu.Unlock()
	st.rev.Add(1)
}

// empty reports whether st holds no stream, candidate, endpoint or count
// (mu held): what a capture's store is while a sharded load fills the
// shards' stores.
func (st *Store) empty() bool {
	return st.streams.len() == 0 && st.cands.len() == 0 && st.eps.len() == 0 && len(st.epByCall) == 0 &&
		len(st.order) == 0 && len(st.candQ) == 0 && st.ordinal == 0 && st.lastNs == 0 &&
		st.stats == (Stats{}) && st.orphans == 0 && st.faxes == 0
}

// sameCaps reports whether two configurations cap streams, candidates and
// endpoints alike and shape a stream's state alike (quality interval, lost
// sequence ring): a store of the one can be adopted by a store of the other.
func sameCaps(a, b Config) bool {
	return a.MaxStreams == b.MaxStreams && a.MaxCandidates == b.MaxCandidates && a.MaxEndpoints == b.MaxEndpoints &&
		a.QualityInterval == b.QualityInterval && a.LostSeqRing == b.LostSeqRing &&
		a.RetainAudio == b.RetainAudio && a.AudioFramesPerStream == b.AudioFramesPerStream && a.AudioMaxBytes == b.AudioMaxBytes
}

// size is how much a merge of o would move: its streams, candidates and
// endpoints.
func (o *Store) size() int {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.streams.len() + o.cands.len() + o.eps.len()
}

// adopt moves every table and counter of o into the empty st (st.mu held),
// keeping st's configuration, STUN tracker, lock, revision and change log;
// o must not be used afterwards. Merge's other stores then merge into the
// adopted tables as into any store.
func (st *Store) adopt(o *Store) {
	o.mu.Lock()
	defer o.mu.Unlock()
	st.hot, o.hot = o.hot, new([hotSlots]*stream)
	st.ordinal = o.ordinal
	st.streams, o.streams = o.streams, newKeyIndex[*stream]()
	st.order, o.order = o.order, nil
	st.orderHd, o.orderHd = o.orderHd, 0
	st.byCall, o.byCall = o.byCall, make(map[string][]*stream)
	st.bySSRC, o.bySSRC = o.bySSRC, make(map[uint32][]*stream)
	st.orphanEP, o.orphanEP = o.orphanEP, make(map[netip.AddrPort][]*stream)
	st.cands, o.cands = o.cands, newKeyIndex[*candidate]()
	st.candQ, o.candQ = o.candQ, nil
	st.candHd, o.candHd = o.candHd, 0
	st.eps, o.eps = o.eps, newEPIndex()
	st.epByCall, o.epByCall = o.epByCall, make(map[uint64]*callEndpoints)
	st.epSeed = o.epSeed // epByCall is keyed by callHash under this seed
	st.epQ, o.epQ = o.epQ, addrQueue{}
	st.epOrd = o.epOrd
	st.codecs = o.codecs
	st.stats = o.stats
	st.lastNs = o.lastNs
	st.orphans = o.orphans
	st.faxes = o.faxes
	st.audio, o.audio = o.audio, audioState{}
}

// keyCompare orders streams with the same first packet time
// deterministically, whatever order they were created in.
func keyCompare(a, b Key) int {
	if c := a.Src.Compare(b.Src); c != 0 {
		return c
	}
	if c := a.Dst.Compare(b.Dst); c != 0 {
		return c
	}
	if c := cmp.Compare(a.SSRC, b.SSRC); c != 0 {
		return c
	}
	switch {
	case a.Fax == b.Fax:
		return 0
	case a.Fax:
		return 1
	}
	return -1
}
