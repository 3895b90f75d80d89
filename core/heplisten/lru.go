package heplisten

import "container/list"

// lru is a map with a fixed capacity that forgets its least recently used
// entry to make room, counting what it forgets. It is not safe for
// concurrent use.
type lru[K comparable, V any] struct {
	max     int
	m       map[K]*list.Element
	order   list.List // front = most recent; values are *lruEntry
	evicted uint64
}

type lruEntry[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, m: make(map[K]*list.Element)}
}

// get returns the entry for k, creating it with mk when absent, and marks
// it most recently used.
func (c *lru[K, V]) get(k K, mk func() V) *V {
	if el, ok := c.m[k]; ok {
		c.order.MoveToFront(el)
		return &el.Value.(*lruEntry[K, V]).val
	}
	for len(c.m) >= c.max && c.max > 0 {
		old := c.order.Back()
		delete(c.m, old.Value.(*lruEntry[K, V]).key)
		c.order.Remove(old)
		c.evicted++
	}
	e := &lruEntry[K, V]{key: k, val: mk()}
	c.m[k] = c.order.PushFront(e)
	return &e.val
}

func (c *lru[K, V]) len() int { return len(c.m) }

// each visits the entries from most to least recently used.
func (c *lru[K, V]) each(fn func(V)) {
	for el := c.order.Front(); el != nil; el = el.Next() {
		fn(el.Value.(*lruEntry[K, V]).val)
	}
}
