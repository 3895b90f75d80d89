package dialog

// The store's LRU list (the held dialogs, most recently updated first: the
// eviction order, and the order Count, RetainedCounts, the ICMP scan and
// the updated-order listing walk) is kept in two dense arrays indexed by a
// slot each held dialog owns, not in links inside the dialogs. Every
// message moves its dialog to the front, which writes the links of the
// dialog's two neighbours on the list: held in the dialogs, those are two
// dialogs touched at random (on a large capture, two cache misses per
// message); held here, they are entries of an array of 8 bytes per held
// dialog, which stays in the processor's cache. The arrays hold one entry
// per held dialog (MaxDialogs bounds them); a slot freed by an eviction is
// reused by the next dialog.

// lruLink is one slot's neighbours: the slots of the more and the less
// recently updated dialogs, noSlot at the ends.
type lruLink struct{ prev, next int32 }

const noSlot = -1

// lruList is the store's LRU list.
type lruList struct {
	links      []lruLink // by slot
	ds         []*dialog // by slot; nil: free
	free       []int32   // free slots
	head, tail int32     // head: the most recently updated; noSlot when empty
}

// lruEntryBytes is what the list holds per dialog (membudget.go).
const lruEntryBytes = 8 + 8 // a lruLink and a ds entry

func (l *lruList) init() { l.head, l.tail = noSlot, noSlot }

// front returns the most recently updated dialog; nil when none.
func (l *lruList) front() *dialog { return l.at(l.head) }

// back returns the least recently updated dialog; nil when none.
func (l *lruList) back() *dialog { return l.at(l.tail) }

// after returns the dialog updated before d (toward the back); nil at the
// back.
func (l *lruList) after(d *dialog) *dialog { return l.at(l.links[d.slot].next) }

// before returns the dialog updated after d (toward the front); nil at the
// front.
func (l *lruList) before(d *dialog) *dialog { return l.at(l.links[d.slot].prev) }

func (l *lruList) at(i int32) *dialog {
	if i == noSlot {
		return nil
	}
	return l.ds[i]
}

// pushFront adds a dialog not on the list at the front, giving it a slot.
func (l *lruList) pushFront(d *dialog) {
	var i int32
	if n := len(l.free); n > 0 {
		i = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		i = int32(len(l.ds))
		l.ds = append(l.ds, nil)
		l.links = append(l.links, lruLink{})
	}
	l.ds[i] = d
	d.slot = i
	l.linkFront(i)
}

// remove takes d off the list and frees its slot.
func (l *lruList) remove(d *dialog) {
	i := d.slot
	l.unlink(i)
	l.ds[i] = nil
	l.free = append(l.free, i)
	d.slot = noSlot
}

// moveFront moves d, on the list, to the front.
func (l *lruList) moveFront(d *dialog) {
	i := d.slot
	if l.head == i {
		return
	}
	l.unlink(i)
	l.linkFront(i)
}

func (l *lruList) linkFront(i int32) {
	l.links[i] = lruLink{prev: noSlot, next: l.head}
	if l.head != noSlot {
		l.links[l.head].prev = i
	}
	l.head = i
	if l.tail == noSlot {
		l.tail = i
	}
}

func (l *lruList) unlink(i int32) {
	k := l.links[i]
	if k.prev != noSlot {
		l.links[k.prev].next = k.next
	} else {
		l.head = k.next
	}
	if k.next != noSlot {
		l.links[k.next].prev = k.prev
	} else {
		l.tail = k.prev
	}
	l.links[i] = lruLink{prev: noSlot, next: noSlot}
}
