package detect

import "container/list"

// lru is a map capped in entries, evicting the least recently touched
// entry past the cap and counting each eviction. Keys are cut to
// MaxKeyBytes by their callers, so its bytes are bounded by its count.
type lru[V any] struct {
	max     int
	m       map[string]*list.Element
	order   *list.List // front: most recent
	evicted uint64
}

type lruEntry[V any] struct {
	key string
	val V
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, m: map[string]*list.Element{}, order: list.New()}
}

// get returns the value and touches it.
func (l *lru[V]) get(k string) (V, bool) {
	if e, ok := l.m[k]; ok {
		l.order.MoveToFront(e)
		return e.Value.(*lruEntry[V]).val, true
	}
	var zero V
	return zero, false
}

// put sets the value, evicting the oldest entry at the cap.
func (l *lru[V]) put(k string, v V) {
	if e, ok := l.m[k]; ok {
		e.Value.(*lruEntry[V]).val = v
		l.order.MoveToFront(e)
		return
	}
	if len(l.m) >= l.max {
		if old := l.order.Back(); old != nil {
			delete(l.m, old.Value.(*lruEntry[V]).key)
			l.order.Remove(old)
			l.evicted++
		}
	}
	l.m[k] = l.order.PushFront(&lruEntry[V]{key: k, val: v})
}

// each calls fn for every value, most recent first.
func (l *lru[V]) each(fn func(k string, v V)) {
	for e := l.order.Front(); e != nil; e = e.Next() {
		en := e.Value.(*lruEntry[V])
		fn(en.key, en.val)
	}
}

// cut bounds a sender-chosen key.
func cut(s string) string {
	if len(s) > MaxKeyBytes {
		return s[:MaxKeyBytes]
	}
	return s
}
