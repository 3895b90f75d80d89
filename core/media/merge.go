package media

import "cmp"

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
func (st *Store) Merge(others ...*Store) {
	st.mu.Lock()
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
		o.mu.Unlock()
	}
	st.chg.all = st.chg.epoch != 0 // every dialog's streams may have moved
	st.mu.Unlock()
	st.rev.Add(1)
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
