package host

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// maxStoredEvents is how many of a session's most recent SSE events are
// kept for a client that resumes a broken stream (Last-Event-ID). A session
// that listens on a GET stream has every notification recorded, for as long
// as the session lives, whether or not anyone is connected: without a cap a
// subscriber that went away without DELETE grew the store by one event per
// notification for as long as the server ran.
const maxStoredEvents = 256

// boundedEventStore is mcp-go's server.EventStore keeping, per session, the
// maxStoredEvents most recent events over all of its streams. The oldest go
// first, so an event still held has every later event of its stream held
// too: a resume either replays without a gap or is refused (an ID no longer
// held is unknown, and the client reopens the stream afresh).
type boundedEventStore struct {
	mu       sync.Mutex
	seq      uint64
	max      int
	sessions map[string][]storedEvent // session id → events, oldest first
	// trimmed counts events dropped at the cap.
	trimmed uint64
	// alive, when set, says whether a session is live: an event for one
	// that ended is not recorded (mcp-go's listening pump can deliver after
	// the purge that ends the session, which would leave its events
	// behind for good).
	alive func(id string) bool
}

type storedEvent struct {
	seq    uint64
	stream string
	msg    json.RawMessage
}

var _ server.EventStore = (*boundedEventStore)(nil)

func newBoundedEventStore(max int) *boundedEventStore {
	return &boundedEventStore{max: max, sessions: map[string][]storedEvent{}}
}

// StoreEvent records message as the next event of streamID.
func (s *boundedEventStore) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	msg := make(json.RawMessage, len(message))
	copy(msg, message)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if s.alive != nil && !s.alive(sessionID) {
		return strconv.FormatUint(s.seq, 10), nil
	}
	evs := append(s.sessions[sessionID], storedEvent{seq: s.seq, stream: streamID, msg: msg})
	if over := len(evs) - s.max; over > 0 {
		clear(evs[:over]) // release the messages dropped
		evs = evs[over:]
		s.trimmed += uint64(over)
	}
	s.sessions[sessionID] = evs
	return strconv.FormatUint(s.seq, 10), nil
}

// ReplayEventsAfter sends every event held after lastEventID on its stream.
func (s *boundedEventStore) ReplayEventsAfter(_ context.Context, sessionID, lastEventID string, send func(eventID string, message json.RawMessage) error) (string, error) {
	seq, err := strconv.ParseUint(lastEventID, 10, 64)
	s.mu.Lock()
	evs := s.sessions[sessionID]
	i := sort.Search(len(evs), func(i int) bool { return evs[i].seq >= seq })
	if err != nil || i == len(evs) || evs[i].seq != seq {
		s.mu.Unlock()
		return "", fmt.Errorf("%w: %s", server.ErrUnknownEventID, lastEventID)
	}
	stream := evs[i].stream
	var tail []storedEvent
	for _, ev := range evs[i+1:] {
		if ev.stream == stream {
			tail = append(tail, ev)
		}
	}
	s.mu.Unlock()
	for _, ev := range tail {
		if err := send(strconv.FormatUint(ev.seq, 10), ev.msg); err != nil {
			return "", err
		}
	}
	return stream, nil
}

// PurgeSession drops every event of an ended session.
func (s *boundedEventStore) PurgeSession(_ context.Context, sessionID string) error {
	s.mu.Lock()
	delete(s.sessions, sessionID)
	s.mu.Unlock()
	return nil
}

// held is the number of events held over every session, and of sessions.
func (s *boundedEventStore) held() (events, sessions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, evs := range s.sessions {
		events += len(evs)
	}
	return events, len(s.sessions)
}
