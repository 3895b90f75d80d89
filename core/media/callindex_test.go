package media

import (
	"slices"
	"testing"
)

// TestCallEndpointsWithCollidingHashesStayApart puts three Call-IDs under
// one hash of the endpoint index and removes their endpoints in different
// orders: each Call-ID keeps exactly its own endpoints, and the hash leaves
// the index with the last of them.
func TestCallEndpointsWithCollidingHashesStayApart(t *testing.T) {
	const h = 42
	for _, tc := range []struct {
		name   string
		remove []string // Call-IDs whose endpoint is removed, in order
	}{
		{"remove the oldest first", []string{"a", "b", "c"}},
		{"remove the newest first", []string{"c", "b", "a"}},
		{"remove the middle first", []string{"b", "a", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := NewStore(Config{})
			eps := map[string]*endpoint{}
			for _, id := range []string{"a", "b", "c"} {
				eps[id] = &endpoint{callID: id}
				st.addCallEndpointAt(h, id, eps[id])
			}
			st.addCallEndpointAt(h, "b", &endpoint{callID: "b"}) // b's second
			left := []string{"a", "b", "c"}
			for _, id := range tc.remove {
				st.unindexEndpointAt(h, eps[id])
				left = slices.DeleteFunc(left, func(x string) bool { return x == id })
				for _, other := range []string{"a", "b", "c"} {
					ce := st.callEndpointsOf(other, h)
					want := 0
					if slices.Contains(left, other) {
						want = 1
					}
					if other == "b" {
						want++ // its second endpoint stays
					}
					got := 0
					if ce != nil {
						got = len(ce.l)
						for _, ep := range ce.l {
							if ep.callID != other {
								t.Fatalf("after removing %s: %s lists an endpoint of %s", id, other, ep.callID)
							}
						}
					}
					if got != want {
						t.Fatalf("after removing %s: %s lists %d endpoints, want %d", id, other, got, want)
					}
				}
			}
			if ce := st.epByCall[h]; ce == nil || ce.callID != "b" || ce.next != nil {
				t.Fatalf("index holds %+v under the hash, want b's list alone", ce)
			}
		})
	}
}

// TestNewCallEndpointListsAsAddCallEndpoint: newCallEndpoint, which
// allocates a call's first endpoint with its list, leaves the index as
// newEndpoint followed by addCallEndpointAt does (the same lists, in the
// same order, the same chains under a shared hash), and every endpoint it
// returns for up to endpointFormats formats has room for them.
func TestNewCallEndpointListsAsAddCallEndpoint(t *testing.T) {
	type add struct {
		callID  string
		h       uint64
		formats int
	}
	for _, tc := range []struct {
		name string
		adds []add
	}{
		{"one call, offer and answer", []add{{"a", 1, 3}, {"a", 1, 2}}},
		{"first endpoint with more formats than the block holds", []add{{"a", 1, 5}, {"a", 1, 1}}},
		{"no formats", []add{{"a", 1, 0}}},
		{"three calls under one hash", []add{{"a", 7, 1}, {"b", 7, 4}, {"c", 7, 3}, {"b", 7, 2}, {"a", 7, 9}}},
		{"more endpoints than the list's own room", []add{{"a", 1, 3}, {"a", 1, 3}, {"a", 1, 3}, {"a", 1, 8}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			general, fast := NewStore(Config{}), NewStore(Config{})
			for i, a := range tc.adds {
				g := newEndpoint(a.formats)
				g.callID, g.ordinal = a.callID, uint64(i)
				general.addCallEndpointAt(a.h, a.callID, g)
				f := fast.newCallEndpoint(a.h, a.callID, a.formats)
				f.callID, f.ordinal = a.callID, uint64(i)
				// room for a small list in the allocation; a longer one is
				// made by OnSDP, as for newEndpoint's
				if room := a.formats <= endpointFormats; len(f.formats) != 0 || room && cap(f.formats) < a.formats {
					t.Fatalf("add %d: formats len %d cap %d, want empty with room for %d", i, len(f.formats), cap(f.formats), a.formats)
				}
			}
			if len(general.epByCall) != len(fast.epByCall) {
				t.Fatalf("%d hashes indexed, want %d", len(fast.epByCall), len(general.epByCall))
			}
			for h, gce := range general.epByCall {
				fce := fast.epByCall[h]
				for gce != nil || fce != nil {
					if gce == nil || fce == nil || gce.callID != fce.callID || len(gce.l) != len(fce.l) {
						t.Fatalf("hash %d: chain differs: %+v, want %+v", h, fce, gce)
					}
					for i := range gce.l {
						if gce.l[i].ordinal != fce.l[i].ordinal || fce.l[i].callID != fce.callID {
							t.Fatalf("%s: endpoint %d is #%d, want #%d", gce.callID, i, fce.l[i].ordinal, gce.l[i].ordinal)
						}
					}
					gce, fce = gce.next, fce.next
				}
			}
		})
	}
}
