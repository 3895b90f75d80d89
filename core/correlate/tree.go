package correlate

// Node is one leg of a call tree.
type Node struct {
	// CallID is the leg's Call-ID, verbatim.
	CallID string
	// Depth is the number of edges from the root (0 for the root).
	Depth int
	// Parent is the Call-ID of the leg this one was found from; "" for the
	// root.
	Parent string
	// Edge is how the leg was found from its parent; nil for the root.
	Edge *Leg
	// Followed: the walk searched this leg's own legs. A timing leaf is
	// never followed; a leg still queued when the walk reached its limit
	// was not searched either.
	Followed bool
}

// Tree is every leg of a call reachable from one Call-ID.
type Tree struct {
	// Root is the Call-ID the walk started from.
	Root string
	// Nodes are the legs, root first, in breadth-first order.
	Nodes []Node
	// Truncated: the walk stopped at its limit; legs with Followed false
	// were not searched and legs past the limit were left out.
	Truncated bool
	// HeuristicEdges counts the timing_heuristic legs in Nodes (leaves).
	HeuristicEdges int
	// MaxDepth is the largest Depth in Nodes.
	MaxDepth int
}

// Tree walks the legs of a call from callID, breadth first, over identifier
// matches only; a timing_heuristic match is attached as a leaf and never
// walked through (on a busy proxy every dialog is within a guess of every
// other, so a transitive walk would return the capture, not a call). limit
// caps the legs returned, the root included (at least 1). ok is false when
// the store holds no such Call-ID.
func (c *Correlator) Tree(callID string, limit int) (Tree, bool) {
	limit = max(limit, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refresh()
	root := c.entries[callID]
	if root == nil {
		return Tree{Root: callID}, false
	}
	t := Tree{Root: callID, Nodes: []Node{{CallID: callID}}}
	in := map[string]bool{callID: true}
	timing := map[int][]Leg{} // node index → its timing matches
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		if i != 0 && len(t.Nodes) >= limit {
			// The walk stops: the queued legs were not searched.
			t.Truncated = true
			break
		}
		queue = queue[1:]
		e := c.entries[t.Nodes[i].CallID]
		t.Nodes[i].Followed = true
		for _, l := range c.find(e) {
			if !l.IdentifierMatch {
				timing[i] = append(timing[i], l)
				continue
			}
			if in[l.CallID] {
				continue
			}
			if len(t.Nodes) >= limit {
				t.Truncated = true
				continue
			}
			in[l.CallID] = true
			edge := l
			t.Nodes = append(t.Nodes, Node{CallID: l.CallID, Depth: t.Nodes[i].Depth + 1, Parent: t.Nodes[i].CallID, Edge: &edge})
			queue = append(queue, len(t.Nodes)-1)
		}
	}
	// Timing matches of the legs searched hang off them as leaves.
	n := len(t.Nodes)
	for i := 0; i < n; i++ {
		for _, l := range timing[i] {
			if in[l.CallID] {
				continue
			}
			if len(t.Nodes) >= limit {
				t.Truncated = true
				continue
			}
			in[l.CallID] = true
			edge := l
			t.Nodes = append(t.Nodes, Node{CallID: l.CallID, Depth: t.Nodes[i].Depth + 1, Parent: t.Nodes[i].CallID, Edge: &edge})
			t.HeuristicEdges++
		}
	}
	for _, nd := range t.Nodes {
		t.MaxDepth = max(t.MaxDepth, nd.Depth)
	}
	return t, true
}
