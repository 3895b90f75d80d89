package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/testcap"
	"github.com/sipnab/sipnab/internal/testengine"
)

// loadSchema reads a committed schema of docs/schemas.
func loadSchema(t *testing.T, name string) *jsonschema.Resolved {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testcap.Root(), "docs", "schemas", name))
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// readable lists the public captures sipnab reads (two are NetMon files it
// refuses: TestMessagesJSONAgreesWithTshark checks the refusal).
func readable(t *testing.T) []string {
	t.Helper()
	names, err := testcap.PublicNames()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if n != "c07-sip-r2.cap" && n != "rtsp-packets.cap" {
			out = append(out, n)
		}
	}
	return out
}

// validateLines validates every line of an NDJSON output and returns them
// decoded.
func validateLines(t *testing.T, s *jsonschema.Resolved, out []byte) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %d is not one JSON object: %v: %.200s", n, err, sc.Bytes())
		}
		if err := s.Validate(v); err != nil {
			t.Fatalf("line %d fails the schema: %v: %.300s", n, err, sc.Bytes())
		}
		lines = append(lines, v)
	}
	if len(out) > 0 && out[len(out)-1] != '\n' {
		t.Fatal("output does not end with a newline")
	}
	return lines
}

// TestNDJSONLinesMatchTheCommittedSchemasOnEveryPublicCapture: every line
// --json and --json-dialogs write for every public capture validates
// against docs/schemas/message.schema.json and dialog.schema.json, and the
// --json-analyze document against analysis.schema.json; the run line
// comes last and only when the run is not whole.
func TestNDJSONLinesMatchTheCommittedSchemasOnEveryPublicCapture(t *testing.T) {
	msgSchema, dlgSchema := loadSchema(t, "message.schema.json"), loadSchema(t, "dialog.schema.json")
	anSchema := loadSchema(t, "analysis.schema.json")
	for _, name := range readable(t) {
		t.Run(name, func(t *testing.T) {
			c := testengine.Public(t, engine.Config{}, name)
			st := c.Status()
			var b bytes.Buffer
			n, err := WriteMessagesJSON(&b, c, nil)
			if err != nil {
				t.Fatal(err)
			}
			lines := validateLines(t, msgSchema, b.Bytes())
			wantRun := !st.Complete || MessagesUnwritten(st) > 0
			checkRunLine(t, lines, n, wantRun)

			b.Reset()
			n, err = WriteDialogsJSON(&b, c, nil)
			if err != nil {
				t.Fatal(err)
			}
			lines = validateLines(t, dlgSchema, b.Bytes())
			checkRunLine(t, lines, n, !st.Complete)
			if n != c.Dialogs().Len() {
				t.Errorf("%d dialog lines, the store holds %d", n, c.Dialogs().Len())
			}

			b.Reset()
			if err := WriteAnalysisJSON(&b, c, DefaultOptions()); err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if err := anSchema.Validate(doc); err != nil {
				t.Fatalf("--json-analyze fails the schema: %v", err)
			}
		})
	}
}

func checkRunLine(t *testing.T, lines []map[string]any, n int, want bool) {
	t.Helper()
	got := len(lines) > 0 && lines[len(lines)-1]["sipnab_run"] != nil
	if got != want {
		t.Errorf("trailing sipnab_run line: %v, want %v", got, want)
	}
	wantLines := n
	if want {
		wantLines++
	}
	if len(lines) != wantLines {
		t.Errorf("%d lines, want %d", len(lines), wantLines)
	}
	for i, l := range lines[:max(0, len(lines)-1)] {
		if l["sipnab_run"] != nil {
			t.Errorf("line %d is a run line before the last", i+1)
		}
	}
}

// tsharkMessage is one frame of testdata/captures/messages/<capture>.tsv
// (made by make.sh there): tshark 4.0.17's SIP fields, every occurrence.
type tsharkFrame struct {
	epoch                   string
	src, dst                string
	srcPort, dstPort        string
	methods, codes, callIDs []string
	cseqNums, cseqMethods   []string
	messages                int
}

func readTshark(t *testing.T, path string) map[int]*tsharkFrame {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := func(s string) string {
		f := strings.Fields(s)
		if len(f) == 0 {
			return ""
		}
		return f[len(f)-1]
	}
	out := map[int]*tsharkFrame{}
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		c := strings.Split(line, "\t")
		if len(c) != 15 {
			t.Fatalf("%s: %d columns in %q", path, len(c), line)
		}
		n, err := strconv.Atoi(c[0])
		if err != nil {
			t.Fatal(err)
		}
		f := &tsharkFrame{epoch: c[1],
			src: last(c[2] + " " + c[3]), dst: last(c[4] + " " + c[5]),
			srcPort: last(c[6] + " " + c[7]), dstPort: last(c[8] + " " + c[9]),
			methods: strings.Fields(c[10]), codes: strings.Fields(c[11]), callIDs: strings.Fields(c[12]),
			cseqNums: strings.Fields(c[13]), cseqMethods: strings.Fields(c[14])}
		f.messages = len(f.methods) + len(f.codes)
		out[n] = f
	}
	return out
}

// TestMessagesJSONAgreesWithTshark: on every public capture tshark reads,
// every --json line agrees with tshark's fields of the frame its frame
// pointer names (testdata/captures/messages, tshark 4.0.17): capture time
// to the nanosecond, source and destination address and port, method or
// status code, Call-ID, CSeq number and method; and the count adds up:
// tshark's SIP messages = lines + capture duplicates folded into a line +
// the messages the run line says are in no line (no Call-ID, ...).
func TestMessagesJSONAgreesWithTshark(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testcap.Dir(), "messages", "*.tsv"))
	if err != nil || len(paths) < 20 {
		t.Fatalf("tshark truth: %d files, %v", len(paths), err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".tsv")
		t.Run(name, func(t *testing.T) {
			truth := readTshark(t, path)
			if name == "c07-sip-r2.cap" {
				c := engine.New(engine.Config{}, nil)
				err := c.LoadFiles(t.Context(), []string{testcap.Public(name)})
				if err == nil || !strings.Contains(err.Error(), "NetMon") {
					t.Fatalf("sipnab reads the NetMon file tshark reads (err %v): compare it", err)
				}
				return
			}
			c := testengine.Public(t, engine.Config{}, name)
			tsharkTotal := 0
			for _, f := range truth {
				tsharkTotal += f.messages
			}
			lines, dups := 0, 0
			err := EachMessage(c, nil, func(mo MessageOrder) error {
				v := mo.Msg.View()
				lines++
				dups += v.Duplicates
				return agree(v, truth)
			})
			if err != nil {
				t.Fatal(err)
			}
			un := int(MessagesUnwritten(c.Status()))
			if lines+dups+un != tsharkTotal {
				t.Errorf("tshark: %d SIP messages; sipnab: %d lines + %d duplicates + %d in no line = %d",
					tsharkTotal, lines, dups, un, lines+dups+un)
			}
		})
	}
}

func agree(v dialog.MessageView, truth map[int]*tsharkFrame) error {
	_, ord, ok := strings.Cut(v.Frame, "#")
	ord, _, _ = strings.Cut(ord, "@")
	n, err := strconv.Atoi(ord)
	if !ok || err != nil {
		return fmt.Errorf("message %s/%d: frame pointer %q", v.CallID, v.Index, v.Frame)
	}
	f := truth[n]
	if f == nil {
		return fmt.Errorf("frame %d (%s %s%d): tshark finds no SIP in it", n, v.CallID, v.Method, v.StatusCode)
	}
	var errs []error
	check := func(what, got string, want ...string) {
		for _, w := range want {
			if got == w {
				return
			}
		}
		errs = append(errs, fmt.Errorf("frame %d %s: sipnab %q, tshark %q", n, what, got, want))
	}
	ts := fmt.Sprintf("%d.%09d", v.Timestamp.Unix(), v.Timestamp.Nanosecond())
	check("time", ts, f.epoch)
	check("src", v.Src, f.src)
	check("dst", v.Dst, f.dst)
	check("src_port", strconv.Itoa(int(v.SrcPort)), f.srcPort)
	check("dst_port", strconv.Itoa(int(v.DstPort)), f.dstPort)
	check("call_id", v.CallID, f.callIDs...)
	if v.IsRequest {
		check("method", v.Method, f.methods...)
	} else {
		check("status_code", strconv.Itoa(v.StatusCode), f.codes...)
	}
	if v.CSeq != nil {
		check("cseq number", strconv.FormatUint(uint64(v.CSeq.Number), 10), f.cseqNums...)
		check("cseq method", v.CSeq.Method, f.cseqMethods...)
	}
	return errors.Join(errs...)
}

// dialogTruth is the per-Call-ID part of testdata/captures/truth/*.json
// (tshark 4.0.17; the commands are in each file).
type dialogTruth struct {
	SIP struct {
		Dialogs []struct {
			CallID            string `json:"call_id"`
			Messages          int    `json:"messages"`
			FirstFrame        int    `json:"first_frame"`
			FromUser          string `json:"from_user"`
			ToUser            string `json:"to_user"`
			InviteFinalStatus *int   `json:"invite_final_status"`
		} `json:"dialogs"`
	} `json:"sip"`
}

// TestDialogsJSONAgreesWithTshark: on every public capture, the
// --json-dialogs lines are tshark's Call-IDs, one line each, and each
// agrees with tshark's account of that Call-ID: its messages (msg_count
// plus the capture duplicates folded out of it), its first frame (the
// line's frame pointer) and that frame's time (created_at), From and To
// users, and the final status of its INVITE.
func TestDialogsJSONAgreesWithTshark(t *testing.T) {
	for _, name := range readable(t) {
		t.Run(name, func(t *testing.T) {
			truth := testcap.LoadTruth[dialogTruth](t, name)
			frames := map[int]*tsharkFrame{}
			if p := filepath.Join(testcap.Dir(), "messages", name+".tsv"); len(truth.SIP.Dialogs) > 0 {
				frames = readTshark(t, p)
			}
			c := testengine.Public(t, engine.Config{}, name)
			var b bytes.Buffer
			if _, err := WriteDialogsJSON(&b, c, nil); err != nil {
				t.Fatal(err)
			}
			type line struct {
				dialog.Summary
				Run any `json:"sipnab_run"`
			}
			got := map[string]line{}
			for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
				if l == "" {
					continue
				}
				var v line
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Fatal(err)
				}
				if v.Run != nil {
					continue
				}
				if _, dup := got[v.CallID]; dup {
					t.Errorf("Call-ID %q on two lines", v.CallID)
				}
				got[v.CallID] = v
			}
			if len(got) != len(truth.SIP.Dialogs) {
				t.Errorf("%d dialog lines, tshark %d Call-IDs", len(got), len(truth.SIP.Dialogs))
			}
			for _, d := range truth.SIP.Dialogs {
				v, ok := got[d.CallID]
				if !ok {
					t.Errorf("tshark's Call-ID %q has no line", d.CallID)
					continue
				}
				if n := v.MsgCount + v.Timing.Duplicates; n != d.Messages {
					t.Errorf("%s: msg_count %d + duplicates %d, tshark %d messages", d.CallID, v.MsgCount, v.Timing.Duplicates, d.Messages)
				}
				if want := fmt.Sprintf("%s#%d@", name, d.FirstFrame); !strings.HasPrefix(v.Frame, want) {
					t.Errorf("%s: frame %q, tshark's first frame %d", d.CallID, v.Frame, d.FirstFrame)
				}
				f := frames[d.FirstFrame]
				if f == nil {
					t.Errorf("%s: tshark frame %d not in the per-message truth", d.CallID, d.FirstFrame)
				} else if ts := fmt.Sprintf("%d.%09d", v.CreatedAt.Unix(), v.CreatedAt.Nanosecond()); ts != f.epoch {
					t.Errorf("%s: created_at %s, tshark's first frame at %s", d.CallID, ts, f.epoch)
				}
				// tshark's users are the first message's; the row's are its
				// primary leg's (the INVITE of a Call-ID that first
				// REGISTERed: sipp-branch-scenario.pcapng). tshark reads no
				// user from a bare addr-spec with parameters (To:
				// sip:s@host;line=x, RFC 3261 §20: the user is "s";
				// sip-488-codec-reject.pcapng): compared where it read one.
				first := f != nil && (slices.Contains(f.methods, v.Method) || len(f.methods) == 0)
				if first && d.FromUser != "" && v.FromUser != d.FromUser || first && d.ToUser != "" && v.ToUser != d.ToUser {
					t.Errorf("%s: from/to user %q/%q, tshark %q/%q", d.CallID, v.FromUser, v.ToUser, d.FromUser, d.ToUser)
				}
				// tshark's INVITE final is the first INVITE's; a challenged
				// call's row reports the final after the challenge.
				if d.InviteFinalStatus != nil && v.Method == "INVITE" && v.Challenges == 0 && v.FinalStatusCode != *d.InviteFinalStatus {
					t.Errorf("%s: final_status_code %d, tshark's INVITE final %d", d.CallID, v.FinalStatusCode, *d.InviteFinalStatus)
				}
			}
		})
	}
}
