package decode

// listElem is an element of elist.
type listElem struct {
	prev, next *listElem
	value      any
}

// elist is a minimal doubly-linked list ordering reassembly entries from
// oldest (front) to newest (back).
type elist struct {
	head, tail *listElem
}

func (l *elist) front() *listElem { return l.head }

func (l *elist) pushBack(v any) *listElem {
	e := &listElem{value: v}
	l.linkBack(e)
	return e
}

func (l *elist) linkBack(e *listElem) {
	e.prev, e.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = e
	} else {
		l.head = e
	}
	l.tail = e
}

func (l *elist) remove(e *listElem) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

func (l *elist) moveToBack(e *listElem) {
	if l.tail == e {
		return
	}
	l.remove(e)
	l.linkBack(e)
}
