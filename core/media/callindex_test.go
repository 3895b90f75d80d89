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
