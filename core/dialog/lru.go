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
// per held dialog (MaxDialogs bounds them), in chunks of lruChunkSlots so
// that growing never copies them nor leaves the old arrays to the
// collector; a slot freed by an eviction is reused by the next dialog.

// lruLink is one slot's neighbours: the slots of the more and the less
// recently updated dialogs, noSlot at the ends.
type lruLink struct{ prev, next int32 }

const noSlot = -1

// lruChunkSlots is how many slots a chunk holds (a power of two): 8 KiB.
const lruChunkSlots = 512

// lruChunk holds the links and dialogs of lruChunkSlots slots.
type lruChunk struct {
	links [lruChunkSlots]lruLink
	ds    [lruChunkSlots]*dialog // nil: free
}

// lruList is the store's LRU list.
type lruList struct {
	chunks     []*lruChunk // slot i is in chunks[i/lruChunkSlots]
	n          int32       // slots handed out (free ones included)
	free       []int32     // free slots
	head, tail int32       // head: the most recently updated; noSlot when empty
}

// link returns slot i's links.
func (l *lruList) link(i int32) *lruLink {
	return &l.chunks[i/lruChunkSlots].links[i%lruChunkSlots]
}

// dialogAt returns slot i's dialog.
func (l *lruList) dialogAt(i int32) *dialog {
	return l.chunks[i/lruChunkSlots].ds[i%lruChunkSlots]
}

func (l *lruList) setDialog(i int32, d *dialog) {
	l.chunks[i/lruChunkSlots].ds[i%lruChunkSlots] = d
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
func (l *lruList) after(d *dialog) *dialog { return l.at(l.link(d.slot).next) }

// before returns the dialog updated after d (toward the front); nil at the
// front.
func (l *lruList) before(d *dialog) *dialog { return l.at(l.link(d.slot).prev) }

func (l *lruList) at(i int32) *dialog {
	if i == noSlot {
		return nil
	}
	return l.dialogAt(i)
}

// pushFront adds a dialog not on the list at the front, giving it a slot.
func (l *lruList) pushFront(d *dialog) {
	var i int32
	if n := len(l.free); n > 0 {
		i = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		i = l.n
		l.n++
		if int(i/lruChunkSlots) == len(l.chunks) {
			l.chunks = append(l.chunks, new(lruChunk))
		}
	}
	l.setDialog(i, d)
	d.slot = i
	l.linkFront(i)
}

// remove takes d off the list and frees its slot.
func (l *lruList) remove(d *dialog) {
	i := d.slot
	l.unlink(i)
	l.setDialog(i, nil)
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
	*l.link(i) = lruLink{prev: noSlot, next: l.head}
	if l.head != noSlot {
		l.link(l.head).prev = i
	}
	l.head = i
	if l.tail == noSlot {
		l.tail = i
	}
}

func (l *lruList) unlink(i int32) {
	k := *l.link(i)
	if k.prev != noSlot {
		l.link(k.prev).next = k.next
	} else {
		l.head = k.next
	}
	if k.next != noSlot {
		l.link(k.next).prev = k.prev
	} else {
		l.tail = k.prev
	}
	*l.link(i) = lruLink{prev: noSlot, next: noSlot}
}
