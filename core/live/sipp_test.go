package live_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sipnab/sipnab/core/dialog"
	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/core/live"
	"github.com/sipnab/sipnab/core/packet"
)

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

type sipFrames struct {
	mu     sync.Mutex
	lt     []uint16
	frames [][]byte
}

func (s *sipFrames) add(f *packet.Frame) {
	if !bytes.Contains(f.Data, []byte("SIP/2.0")) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lt = append(s.lt, f.LinkType)
	s.frames = append(s.frames, append([]byte(nil), f.Data...))
}

func (s *sipFrames) count(re *regexp.Regexp) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.frames {
		if re.Match(f) {
			n++
		}
	}
	return n
}

// TestSIPpCallOverVeth captures, for real, a SIPp call between two network
// namespaces' ends of a veth pair: the UAS runs in a namespace made for the
// test, the UAC in this one, and the live source captures on this end of the
// pair. The frames go to the engine too, which must rebuild the dialog.
func TestSIPpCallOverVeth(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace and capture; skipped")
	}
	for _, tool := range []string{"ip", "sipp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian packages iproute2 and sip-tester); skipped", tool)
		}
	}
	id := os.Getpid() % 10000
	ns := fmt.Sprintf("snb-live-%d", id)
	va, vb := fmt.Sprintf("snb%da", id), fmt.Sprintf("snb%db", id)
	net3 := fmt.Sprintf("198.18.%d", id%250)
	uasIP, uacIP := net3+".2", net3+".1"

	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run(t, "ip", "link", "add", va, "type", "veth", "peer", "name", vb)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", va).Run() })
	run(t, "ip", "link", "set", vb, "netns", ns)
	run(t, "ip", "addr", "add", uacIP+"/30", "dev", va)
	run(t, "ip", "link", "set", va, "up")
	run(t, "ip", "-n", ns, "addr", "add", uasIP+"/30", "dev", vb)
	run(t, "ip", "-n", ns, "link", "set", vb, "up")
	run(t, "ip", "-n", ns, "link", "set", "lo", "up")

	eng := engine.New(engine.Config{}, nil)
	seen := &sipFrames{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	capt, err := live.Start(ctx, live.Options{Device: va}, packet.FrameSinkFunc(func(f *packet.Frame) {
		seen.add(f)
		eng.HandleFrame(f)
	}))
	if err != nil {
		t.Fatal(err)
	}
	eng.AttachLive(va, capt.Stop, capt.Done(), capt.Err)

	dir := t.TempDir()
	uas := exec.Command("ip", "netns", "exec", ns, "sipp", "-sn", "uas", "-i", uasIP, "-p", "5060", "-m", "1", "-nostdin", "-timeout", "30s", "-timeout_error")
	uas.Dir = dir
	var uasOut bytes.Buffer
	uas.Stdout, uas.Stderr = &uasOut, &uasOut
	if err := uas.Start(); err != nil {
		t.Fatal(err)
	}
	defer uas.Process.Kill()
	// wait for the UAS to listen
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, _ := exec.Command("ip", "netns", "exec", ns, "ss", "-Hlun", "sport = :5060").Output()
		if len(bytes.TrimSpace(out)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SIPp UAS never listened: %s", uasOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	uac := exec.Command("sipp", "-sn", "uac", uasIP+":5060", "-i", uacIP, "-p", "5061", "-m", "1", "-nostdin", "-timeout", "30s", "-timeout_error")
	uac.Dir = dir
	if out, err := uac.CombinedOutput(); err != nil {
		t.Fatalf("SIPp UAC: %v\n%s", err, out)
	}
	if err := uas.Wait(); err != nil {
		t.Fatalf("SIPp UAS: %v\n%s", err, uasOut.String())
	}

	bye200 := regexp.MustCompile(`(?s)^.*SIP/2\.0 200 .*CSeq: *\d+ BYE`)
	deadline = time.Now().Add(15 * time.Second)
	for seen.count(bye200) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the 200 OK to BYE was not captured")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := eng.Close(); err != nil {
		t.Fatalf("closing the engine: %v", err)
	}
	st := capt.Stats()
	if !st.KernelStats || st.Received == 0 {
		t.Fatalf("stats %+v", st)
	}

	checks := []struct {
		name string
		re   string
		want int
	}{
		{"INVITE", `INVITE sip:`, 1},
		{"180", `SIP/2\.0 180 `, 1},
		{"200 to INVITE", `(?s)SIP/2\.0 200 .*CSeq: *\d+ INVITE`, 1},
		{"ACK", `ACK sip:`, 1},
		{"BYE", `BYE sip:`, 1},
		{"200 to BYE", `(?s)SIP/2\.0 200 .*CSeq: *\d+ BYE`, 1},
	}
	for _, c := range checks {
		if got := seen.count(regexp.MustCompile(c.re)); got != c.want {
			t.Errorf("captured %d frames with %s, want %d", got, c.name, c.want)
		}
	}
	seen.mu.Lock()
	nSIP := len(seen.frames)
	for _, lt := range seen.lt {
		if lt != live.LinkTypeEthernet {
			t.Errorf("frame with link type %d, want Ethernet", lt)
		}
	}
	var callID string
	if m := regexp.MustCompile(`(?m)^Call-ID: *(\S+)`).FindSubmatch(seen.frames[0]); m != nil {
		callID = string(m[1])
	}
	seen.mu.Unlock()
	if nSIP != 6 {
		t.Errorf("captured %d SIP frames, want 6 (INVITE, 180, 200, ACK, BYE, 200)", nSIP)
	}

	// the engine rebuilt the dialog from the live frames
	sums := eng.Dialogs().Summaries(dialog.ByCreated)
	if len(sums) != 1 {
		t.Fatalf("engine has %d dialogs, want 1", len(sums))
	}
	d := sums[0]
	if d.CallID != callID || d.Method != "INVITE" || d.FinalStatusCode != 200 || d.MsgCount != 6 || d.State != "Completed" {
		t.Fatalf("dialog %+v; want Call-ID %s, INVITE, final 200, 6 messages, Completed", d, callID)
	}
}
