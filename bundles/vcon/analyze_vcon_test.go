package vcon

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sipnab/sipnab/sdk"
)

type analyzeOut struct {
	ContainerUUID   string `json:"container_uuid"`
	Traces          int    `json:"traces"`
	FramesRebuilt   int    `json:"frames_rebuilt"`
	MessagesSkipped int    `json:"messages_skipped"`
	Dialogs         []struct {
		CallID          string  `json:"call_id"`
		State           string  `json:"state"`
		Method          string  `json:"method"`
		MsgCount        int     `json:"msg_count"`
		FinalStatusCode int     `json:"final_status_code"`
		DurationSec     float64 `json:"duration_sec"`
		Timing          struct {
			PDDMs *float64 `json:"pdd_ms"`
		} `json:"timing"`
	} `json:"dialogs"`
	TotalMatched int `json:"total_matched"`
}

// TestAnalyzeRoundTrip: each exported container of sip-rtp-g711.pcap,
// analysed apart, gives back its dialog as the loaded capture holds it
// (tshark: 1-1966@10.0.2.20 six messages, 1-1968@10.0.2.20 four, both
// INVITEs answered 200), through container and container_base64 alike.
func TestAnalyzeRoundTrip(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	var exp struct {
		Containers []struct {
			CallID    string          `json:"call_id"`
			Container json.RawMessage `json:"container"`
		} `json:"containers"`
	}
	call(t, tools["export_vcon"], `{}`, &exp)
	want := map[string]int{"1-1966@10.0.2.20": 6, "1-1968@10.0.2.20": 4}
	if len(exp.Containers) != 2 {
		t.Fatalf("%d containers", len(exp.Containers))
	}
	for _, ct := range exp.Containers {
		for _, args := range []string{
			`{"container":` + string(ct.Container) + `}`,
			`{"container_base64":"` + base64.StdEncoding.EncodeToString(ct.Container) + `"}`,
		} {
			var out analyzeOut
			call(t, tools["analyze_vcon"], args, &out)
			if out.Traces != 1 || out.FramesRebuilt != want[ct.CallID] || out.MessagesSkipped != 0 || out.TotalMatched != 1 || len(out.Dialogs) != 1 {
				t.Fatalf("%s: %+v", ct.CallID, out)
			}
			dl := out.Dialogs[0]
			if dl.CallID != ct.CallID || dl.Method != "INVITE" || dl.FinalStatusCode != 200 || dl.MsgCount != want[ct.CallID] {
				t.Errorf("%s: row %+v", ct.CallID, dl)
			}
		}
	}
}

// TestAnalyzeTheExample: the descriptor's example, one INVITE answered
// 486 one second later.
func TestAnalyzeTheExample(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	b, _ := json.Marshal(map[string]any{"container": exampleContainer})
	var out analyzeOut
	call(t, tools["analyze_vcon"], string(b), &out)
	if len(out.Dialogs) != 1 || out.Dialogs[0].CallID != "ex-1@192.0.2.1" || out.Dialogs[0].FinalStatusCode != 486 ||
		out.Dialogs[0].State != "Failed" || out.ContainerUUID != "01928e10-193e-8231-b9a2-279e0d16bc46" {
		t.Errorf("%+v", out)
	}
}

// TestAnalyzeSkipsWhatItCannotRebuild: a message without an address, one
// with an unreadable time and one not base64url are skipped and counted.
func TestAnalyzeSkipsWhatItCannotRebuild(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	doc := `{"attachments":[{"purpose":"sip-message-trace","body":{"messages":[` +
		`{"time":"2026-01-01T00:00:00Z","src":"nowhere","dst":"192.0.2.2:5060","text":"OPTIONS sip:x SIP/2.0\r\n\r\n"},` +
		`{"time":"yesterday","src":"192.0.2.1:5060","dst":"192.0.2.2:5060","text":"x"},` +
		`{"time":"2026-01-01T00:00:00Z","src":"192.0.2.1:5060","dst":"192.0.2.2:5060","base64url":"***"}]}}]}`
	var out struct {
		FramesRebuilt   int `json:"frames_rebuilt"`
		MessagesSkipped int `json:"messages_skipped"`
		Skipped         []struct {
			Message int    `json:"message"`
			Reason  string `json:"reason"`
		} `json:"skipped"`
		TotalMatched int `json:"total_matched"`
	}
	call(t, tools["analyze_vcon"], `{"container":`+doc+`}`, &out)
	if out.FramesRebuilt != 0 || out.MessagesSkipped != 3 || len(out.Skipped) != 3 || out.TotalMatched != 0 ||
		!strings.Contains(out.Skipped[0].Reason, "ip:port") || !strings.Contains(out.Skipped[1].Reason, "RFC 3339") || !strings.Contains(out.Skipped[2].Reason, "base64url") {
		t.Errorf("%+v", out)
	}
}

func TestAnalyzeRefusals(t *testing.T) {
	_, tools := loaded(t, "sip-rtp-g711.pcap")
	for _, tc := range []struct{ name, args string }{
		{"neither", `{}`},
		{"both", `{"container":{},"container_base64":"e30="}`},
		{"not base64", `{"container_base64":"%%%"}`},
		{"base64 of no object", `{"container_base64":"WzFd"}`},
		{"no trace attachment", `{"container":{"uuid":"x"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if e := callErr(t, tools["analyze_vcon"], tc.args); e.Code != sdk.CodeInvalidParams {
				t.Errorf("code %d: %s", e.Code, e.Message)
			}
		})
	}
}
