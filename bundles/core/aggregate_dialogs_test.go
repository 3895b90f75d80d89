package core

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/core/query"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/sdk"
)

type lqAggregate struct {
	GroupBy string `json:"group_by"`
	Buckets []struct {
		Value string `json:"value"`
		Count int    `json:"count"`
	} `json:"buckets"`
	OtherCount      int   `json:"other_count"`
	DistinctValues  int   `json:"distinct_values"`
	TotalMatched    int   `json:"total_matched"`
	SourceExhausted *bool `json:"source_exhausted"`
	SchemaVersion   int   `json:"schema_version"`
}

func (a lqAggregate) counts() map[string]int {
	m := map[string]int{}
	for _, b := range a.Buckets {
		m[b.Value] = b.Count
	}
	return m
}

// lqOpeningMethod is the row's method from tshark's per-Call-ID request
// counts. A Call-ID with one request method (ACK aside) opened with it; an
// INVITE with its in-dialog requests (BYE, CANCEL, INFO, PRACK) opened with
// the INVITE. A Call-ID that holds a call is a call wherever the INVITE sits
// (docs/data-model.md): sipp-branch-scenario.pcapng's Call-IDs hold a
// REGISTER and then an INVITE under different From tags, and all 1334 rows
// are INVITE (tshark -z sip,stat: 1334 INVITEs).
func lqOpeningMethod(t *testing.T, d lqTruthDialog) string {
	t.Helper()
	var methods []string
	for m, n := range d.Requests {
		if n > 0 && m != "ACK" {
			methods = append(methods, m)
		}
	}
	slices.Sort(methods)
	switch {
	case len(methods) == 1:
		return methods[0]
	case slices.Contains(methods, "REGISTER") && slices.Contains(methods, "INVITE"):
		return "INVITE"
	case slices.Contains(methods, "INVITE"):
		for _, m := range methods {
			if m != "INVITE" && m != "BYE" && m != "CANCEL" && m != "INFO" && m != "PRACK" {
				t.Fatalf("%s: requests %v: no rule names the opening method", d.CallID, d.Requests)
			}
		}
		return "INVITE"
	}
	t.Fatalf("%s: requests %v: no rule names the opening method", d.CallID, d.Requests)
	return ""
}

// lqResponseCode is the dialog's final_status_code from tshark's
// per-Call-ID answer. tshark reports the first final response to an INVITE
// (invite_final_status), which is a 401/407 challenge when the call was
// challenged; sipnab reports the final response of the retried INVITE
// (challenges count only when nothing else followed), which is the one
// final code other than a challenge among the Call-ID's responses.
// Dialogs without an INVITE answer count as (none).
func lqResponseCode(t *testing.T, d lqTruthDialog) string {
	t.Helper()
	if d.InviteFinalStatus == nil {
		return query.None
	}
	code := *d.InviteFinalStatus
	if code != 401 && code != 407 {
		return strconv.Itoa(code)
	}
	var others []string
	for c, n := range d.Responses {
		if n > 0 && c >= "200" && c != "401" && c != "407" {
			others = append(others, c)
		}
	}
	switch len(others) {
	case 0:
		return strconv.Itoa(code)
	case 1:
		return others[0]
	}
	t.Fatalf("%s: challenged, then several final codes %v: the retried INVITE's answer is ambiguous", d.CallID, others)
	return ""
}

// TestAggregateDialogsAgreesWithTshark counts every public capture's
// dialogs by method and by response_code and compares with tshark's
// per-Call-ID data (mapped as lqOpeningMethod and lqResponseCode say), and
// by from.user, fenced.
func TestAggregateDialogsAgreesWithTshark(t *testing.T) {
	for _, name := range lqPcapCaptures(t) {
		t.Run(name, func(t *testing.T) {
			tr := testcap.LoadTruth[lqTruth](t, name)
			tools := lqTools(t, lqPublic(t, name))
			wantMethod, wantCode := map[string]int{}, map[string]int{}
			for _, d := range tr.SIP.Dialogs {
				wantMethod[lqOpeningMethod(t, d)]++
				wantCode[lqResponseCode(t, d)]++
			}
			for _, tc := range []struct {
				dim  string
				want map[string]int
			}{
				{"method", wantMethod},
				{"response_code", wantCode},
			} {
				var a lqAggregate
				r := lqCall(t, tools, "aggregate_dialogs", map[string]any{"group_by": tc.dim, "top_n": 1000}, &a)
				if got := a.counts(); !maps.Equal(got, tc.want) {
					t.Errorf("%s: got %v, want %v", tc.dim, got, tc.want)
				}
				if a.TotalMatched != len(tr.SIP.Dialogs) || a.OtherCount != 0 || a.DistinctValues != len(tc.want) ||
					a.GroupBy != tc.dim || !*a.SourceExhausted || a.SchemaVersion != 1 {
					t.Errorf("%s: %+v", tc.dim, a)
				}
				if r.Fenced {
					t.Errorf("%s: sipnab's own derivation fenced", tc.dim)
				}
			}
			if name == "sipp-branch-scenario.pcapng" {
				if wantMethod["INVITE"] != 1334 || wantCode["403"] != 1148 || wantCode["200"] != 102 {
					t.Errorf("mapping: %v %v", wantMethod, wantCode)
				}
			}
		})
	}
}

func TestAggregateDialogsBuckets(t *testing.T) {
	tr := testcap.LoadTruth[lqTruth](t, "sip-routing-error.pcapng")
	tools := lqTools(t, lqPublic(t, "sip-routing-error.pcapng"))
	total := len(tr.SIP.Dialogs)
	for _, dim := range query.Dimensions() {
		for _, top := range []int{0, 1, 2, 3, 1000} {
			t.Run(fmt.Sprintf("%s/top %d", dim, top), func(t *testing.T) {
				args := map[string]any{"group_by": string(dim)}
				if top > 0 {
					args["top_n"] = top
				}
				var a lqAggregate
				r := lqCall(t, tools, "aggregate_dialogs", args, &a)
				sum := a.OtherCount
				for i, b := range a.Buckets {
					sum += b.Count
					if i > 0 && b.Count > a.Buckets[i-1].Count {
						t.Errorf("buckets not largest first: %+v", a.Buckets)
					}
					fenced := strings.HasPrefix(b.Value, sdk.FenceOpen) && strings.HasSuffix(b.Value, sdk.FenceClose)
					if b.Value == query.None {
						continue
					}
					if fenced != dim.SenderWritten() {
						t.Errorf("bucket %q: fenced %v, want %v", b.Value, fenced, dim.SenderWritten())
					}
				}
				if sum != total || a.TotalMatched != total {
					t.Errorf("buckets + other_count = %d, total_matched %d, want %d", sum, a.TotalMatched, total)
				}
				if top > 0 && len(a.Buckets) > top {
					t.Errorf("%d buckets over top_n %d", len(a.Buckets), top)
				}
				if (a.OtherCount > 0) != (a.DistinctValues > len(a.Buckets)) {
					t.Errorf("other_count %d with %d of %d distinct values", a.OtherCount, len(a.Buckets), a.DistinctValues)
				}
				hasFenced := strings.Contains(r.Blocks[0], sdk.FenceOpen)
				if r.Fenced != hasFenced {
					t.Errorf("provenance note %v, fenced text %v", r.Fenced, hasFenced)
				}
			})
		}
	}
}

func TestAggregateDialogsFilterAndNone(t *testing.T) {
	tools := lqTools(t, lqPublic(t, "b2bua-asterisk.pcapng"))
	var a lqAggregate
	lqCall(t, tools, "aggregate_dialogs", map[string]any{"group_by": "rtp.codec"}, &a)
	// The capture's two RTP streams (tshark: g711U) flow between the two
	// phones after Asterisk re-INVITEd both legs to direct media: each leg's
	// SDP (frames 35-41) names both ends, so the streams belong to both legs
	// (core/media since 566fec1); the ten other Call-IDs have none.
	want := map[string]int{sdk.Fence("PCMU"): 2, query.None: 10}
	if !maps.Equal(a.counts(), want) {
		t.Errorf("rtp.codec: got %v, want %v", a.counts(), want)
	}
	lqCall(t, tools, "aggregate_dialogs", map[string]any{"group_by": "state", "filter": "method == SUBSCRIBE or method == PUBLISH"}, &a)
	if a.TotalMatched != 8 || !maps.Equal(a.counts(), map[string]int{"Failed": 8}) {
		t.Errorf("filtered states: %+v", a)
	}
	lqCall(t, tools, "aggregate_dialogs", map[string]any{"group_by": "ua", "filter": "msg_count > 1000"}, &a)
	if a.TotalMatched != 0 || len(a.Buckets) != 0 || a.Buckets == nil || a.DistinctValues != 0 {
		t.Errorf("matching nothing: %+v", a)
	}
}

func TestAggregateDialogsRefusals(t *testing.T) {
	tools := lqTools(t, lqPublic(t, "sip-rtp-g711.pcap"))
	cases := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"unknown dimension", map[string]any{"group_by": "from_user"}, []string{"from_user", "from.user", "rtp.codec"}},
		{"missing dimension", map[string]any{}, []string{"group_by"}},
		{"bad filter", map[string]any{"group_by": "state", "filter": "state = Failed"}, []string{"position"}},
		{"negative top_n", map[string]any{"group_by": "state", "top_n": -1}, []string{"top_n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lqInvoke(t, tools, "aggregate_dialogs", tc.args, sdk.DefaultLimits())
			if lqCode(err) != sdk.CodeInvalidParams {
				t.Fatalf("got %v, want -32602", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
