package core

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/packet"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
	"github.com/sipnab/sipnab/sdk"
)

// resServed is what the bundle registered: its tools by name, its fixed
// resources by URI and its templates by URI template.
type resServed struct {
	tools     map[string]sdk.Tool
	fixed     map[string]sdk.Resource
	templates map[string]sdk.ResourceTemplate
}

// resProvision registers the core bundle on c the way the host does and
// returns what it served.
func resProvision(t *testing.T, c *engine.Capture, limits sdk.Limits) resServed {
	t.Helper()
	reg, err := sdk.Register(context.Background(), []sdk.Bundle{Bundle{}}, func(sdk.Info) sdk.Env {
		return sdk.NewEnv(sdk.EnvOptions{Services: []any{c}, Limits: limits})
	}, sdk.RegistryOptions{SkipBudgets: true})
	if err != nil {
		t.Fatal(err)
	}
	s := resServed{tools: map[string]sdk.Tool{}, fixed: map[string]sdk.Resource{}, templates: map[string]sdk.ResourceTemplate{}}
	b := reg.Bundles()[0]
	for _, tl := range b.Tools {
		s.tools[tl.Name] = tl
	}
	for _, r := range b.Resources {
		s.fixed[r.URI] = r
	}
	for _, tp := range b.Templates {
		s.templates[tp.URITemplate] = tp
	}
	return s
}

func resLoaded(t *testing.T, name string) *engine.Capture {
	t.Helper()
	return testengine.Load(t, engine.Config{Node: "test-node"}, testcap.Public(name))
}

// resToolText is a tool's first block, as tools/call carries it.
func resToolText(t *testing.T, tl sdk.Tool, args any, limits sdk.Limits) (string, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tl.Invoke(context.Background(), b, limits)
	if err != nil {
		return "", err
	}
	return r.Blocks[0], nil
}

func TestCoreBundleServesTheLiveViews(t *testing.T) {
	s := resProvision(t, resLoaded(t, "sip-rtp-g711.pcap"), sdk.DefaultLimits())
	list, ok := s.fixed[liveDialogsURI]
	if !ok || list.Revision == nil || list.MIMEType != "application/json" {
		t.Fatalf("%s: got %+v, want a subscribable JSON resource", liveDialogsURI, list)
	}
	one, ok := s.templates[liveDialogTemplate]
	if !ok || one.Revision == nil || one.Complete == nil {
		t.Fatalf("%s: got %+v, want a subscribable template with completions", liveDialogTemplate, one)
	}
	if len(s.fixed) != 1 || len(s.templates) != 1 {
		t.Errorf("got %d resources and %d templates, want 1 and 1", len(s.fixed), len(s.templates))
	}
}

// TestLiveDialogsIsListDialogs: the live list is list_dialogs' answer to a
// call without arguments, byte for byte, on captures with one page and with
// many pages, and under a response ceiling that trims the page.
func TestLiveDialogsIsListDialogs(t *testing.T) {
	tests := []struct {
		name     string
		capture  string
		maxBytes int
	}{
		{"one call", "sip-rtp-g711.pcap", 0},
		{"several pages", "sipp-branch-scenario.pcapng", 0},
		{"trimmed by the response ceiling", "sipp-branch-scenario.pcapng", 4000},
		{"fenced users", "sip-auth-failure.pcapng", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limits := sdk.Limits{MaxResponseBytes: tc.maxBytes}
			s := resProvision(t, resLoaded(t, tc.capture), limits)
			env := sdk.NewEnv(sdk.EnvOptions{Limits: limits})
			want, err := resToolText(t, s.tools["list_dialogs"], map[string]any{}, env.Limits())
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.fixed[liveDialogsURI].Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != want {
				t.Fatalf("live list differs from list_dialogs:\ngot  %.400s\nwant %.400s", got.Text, want)
			}
			var page struct {
				Returned int   `json:"returned"`
				Total    *int  `json:"total_matched"`
				Trunc    *bool `json:"truncated"`
			}
			if err := json.Unmarshal([]byte(got.Text), &page); err != nil || page.Total == nil || page.Returned == 0 {
				t.Fatalf("not a dialog page: %v %.200s", err, got.Text)
			}
			if tc.maxBytes > 0 && (len(got.Text) > tc.maxBytes || page.Trunc == nil || !*page.Trunc) {
				t.Errorf("ceiling %d: got %d bytes, truncated %v", tc.maxBytes, len(got.Text), page.Trunc)
			}
		})
	}
}

// TestLiveDialogIsGetDialog: every Call-ID of two public captures renders
// exactly get_dialog's first page.
func TestLiveDialogIsGetDialog(t *testing.T) {
	for _, name := range []string{"sip-auth-failure.pcapng", "sip-proxy.pcap", "DTMFsipinfo.pcap"} {
		t.Run(name, func(t *testing.T) {
			c := resLoaded(t, name)
			s := resProvision(t, c, sdk.DefaultLimits())
			tpl := s.templates[liveDialogTemplate]
			ids := c.Dialogs().CallIDs()
			if n := testcap.LoadTruth[truth](t, name).SIP.CallIDs.Count; len(ids) != n {
				t.Fatalf("got %d Call-IDs, tshark counts %d", len(ids), n)
			}
			for _, id := range ids {
				want, err := resToolText(t, s.tools["get_dialog"], map[string]any{"call_id": id}, sdk.DefaultLimits())
				if err != nil {
					t.Fatal(err)
				}
				got, err := tpl.Read(context.Background(), "sipnab://live/dialogs/x", map[string]string{"call_id": id})
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				if got.Text != want {
					t.Errorf("%s: live dialog differs from get_dialog:\ngot  %.300s\nwant %.300s", id, got.Text, want)
				}
			}
		})
	}
}

// TestLiveDialogUnknownCallIDIsAnEmptyPage: a Call-ID the store does not
// hold is get_dialog's envelope with nothing in it, not an error (get_dialog
// itself refuses it), and the page says whether the source was read whole.
func TestLiveDialogUnknownCallIDIsAnEmptyPage(t *testing.T) {
	loaded := resLoaded(t, "sip-rtp-g711.pcap")
	loading := engine.New(engine.Config{}, nil)
	tests := []struct {
		name   string
		c      *engine.Capture
		callID string
		want   string
	}{
		{"unknown on a loaded capture", loaded, "no-such-call@nowhere",
			`{"schema_version":2,"messages":[],"total_messages":0,"returned":0,"first_index":0,"next_cursor":null,"complete":false,"source_exhausted":true,"source_stopped_early":false}`},
		{"empty Call-ID", loaded, "",
			`{"schema_version":2,"messages":[],"total_messages":0,"returned":0,"first_index":0,"next_cursor":null,"complete":false,"source_exhausted":true,"source_stopped_early":false}`},
		{"nothing loaded yet", loading, "a@b",
			`{"schema_version":2,"messages":[],"total_messages":0,"returned":0,"first_index":0,"next_cursor":null,"complete":false,"source_exhausted":false,"source_stopped_early":false}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := resProvision(t, tc.c, sdk.DefaultLimits())
			if _, err := resToolText(t, s.tools["get_dialog"], map[string]any{"call_id": tc.callID}, sdk.DefaultLimits()); err == nil {
				t.Fatalf("get_dialog answered an unknown Call-ID; the resource must differ from it here")
			}
			got, err := s.templates[liveDialogTemplate].Read(context.Background(), "", map[string]string{"call_id": tc.callID})
			if err != nil {
				t.Fatalf("got error %v, want an empty page", err)
			}
			if got.Text != tc.want {
				t.Errorf("got  %s\nwant %s", got.Text, tc.want)
			}
		})
	}
}

func TestCallIDCompletion(t *testing.T) {
	c := resLoaded(t, "sipp-branch-scenario.pcapng")
	complete := resProvision(t, c, sdk.DefaultLimits()).templates[liveDialogTemplate].Complete
	all := c.Dialogs().CallIDs()
	if n := testcap.LoadTruth[truth](t, "sipp-branch-scenario.pcapng").SIP.CallIDs.Count; len(all) != n || n <= 100 {
		t.Fatalf("got %d Call-IDs, tshark counts %d (the test wants more than 100)", len(all), n)
	}
	prefix := all[0][:3]
	var withPrefix []string
	for _, id := range all {
		if strings.HasPrefix(id, prefix) {
			withPrefix = append(withPrefix, id)
		}
	}
	tests := []struct {
		name     string
		variable string
		prefix   string
		want     []string
	}{
		{"every Call-ID in created_at order", "call_id", "", all},
		{"by prefix", "call_id", prefix, withPrefix},
		{"whole Call-ID", "call_id", all[7], []string{all[7]}},
		{"no match", "call_id", "\x00nothing", nil},
		{"unknown variable", "alias", "", nil},
		{"another template's variable", "rule_id", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := complete(context.Background(), tc.variable, tc.prefix)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %d values (%.3q...), want %d", len(got), got, len(tc.want))
			}
		})
	}
	// Never cached: the store's Call-IDs now, including one that arrived
	// after the first completion.
	c2 := engine.New(engine.Config{}, nil)
	complete = resProvision(t, c2, sdk.DefaultLimits()).templates[liveDialogTemplate].Complete
	if got := complete(context.Background(), "call_id", ""); len(got) != 0 {
		t.Fatalf("empty store: got %q", got)
	}
	resFeedSIP(c2, "late-call@x", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	if got := complete(context.Background(), "call_id", "late"); !slices.Equal(got, []string{"late-call@x"}) {
		t.Errorf("after a new call: got %q, want [late-call@x]", got)
	}
}

var resT0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func resFeedSIP(c *engine.Capture, callID string, at time.Time) {
	body := "v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
	msg := "INVITE sip:bob@b SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK" + callID + "\r\n" +
		"From: <sip:alice@a>;tag=1\r\nTo: <sip:bob@b>\r\nCall-ID: " + callID + "\r\nCSeq: 1 INVITE\r\n" +
		"Contact: <sip:alice@10.0.0.1>\r\nContent-Type: application/sdp\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body
	c.HandlePacket(lqSIP(at, "10.0.0.1:5060", "10.0.0.2:5060", msg))
}

func resFeedRTP(c *engine.Capture, seq int) {
	b := make([]byte, 12+160)
	b[0], b[1] = 0x80, 0
	b[2], b[3] = byte(seq>>8), byte(seq)
	b[6], b[7] = byte(seq*160>>8), byte(seq*160)
	b[11] = 7
	c.HandlePacket(&packet.Packet{TS: resT0.Add(time.Duration(seq) * 20 * time.Millisecond),
		Src: netip.MustParseAddrPort("10.0.0.2:30000"), Dst: netip.MustParseAddrPort("10.0.0.1:40000"),
		Transport: packet.TransportUDP, Origin: packet.OriginWire, Payload: b})
}

// TestLiveRevision: the views' revision stays put while nothing changes and
// while only RTP arrives (the stream store moves, the dialog store does
// not), and moves with every SIP message.
func TestLiveRevision(t *testing.T) {
	c := engine.New(engine.Config{}, nil)
	s := resProvision(t, c, sdk.DefaultLimits())
	rev := s.fixed[liveDialogsURI].Revision
	if s.templates[liveDialogTemplate].Revision == nil {
		t.Fatal("the per-dialog view has no revision")
	}
	r0 := rev()
	if r := rev(); r != r0 {
		t.Fatalf("revision moved without a change: %d then %d", r0, r)
	}
	resFeedSIP(c, "rev-1@x", resT0)
	r1 := rev()
	if r1 == r0 {
		t.Fatal("revision did not move with an INVITE")
	}
	before := c.Status().MediaPackets
	for i := range 50 {
		resFeedRTP(c, i)
	}
	if got := c.Status().MediaPackets - before; got != 50 {
		t.Fatalf("the capture counted %d RTP packets, want 50", got)
	}
	if r := rev(); r != r1 {
		t.Errorf("RTP moved the live views' revision (%d to %d): audio would wake dialog subscribers", r1, r)
	}
	list, _ := s.fixed[liveDialogsURI].Read(context.Background())
	resFeedSIP(c, "rev-2@x", resT0.Add(time.Second))
	if r := rev(); r == r1 {
		t.Error("revision did not move with a second INVITE")
	}
	list2, _ := s.fixed[liveDialogsURI].Read(context.Background())
	if list.Text == list2.Text {
		t.Error("the rendering did not change with a new dialog")
	}
}
