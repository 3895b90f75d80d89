// Command turnrtp made testdata/stun/turn-relayed-call.pcapng (see
// testdata/stun/README.md): a SIP call whose RTP crosses a real TURN server
// (coturn) through a channel binding, with ICE connectivity checks through
// the relay. Run as "turnrtp peer" on the far side and "turnrtp client"
// behind the NAT; each exits after about five seconds.
package main

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/sipnab/sipnab/core/stun"
)

const (
	turnServer = "198.51.100.1:3478"
	peerSIP    = "198.51.100.2:5060"
	peerRTP    = "198.51.100.2:4000"
	user, pass = "alice", "secret"
	packets    = 50
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: turnrtp client|peer")
	}
	switch os.Args[1] {
	case "client":
		client()
	case "peer":
		peer()
	}
}

func txid() (t [12]byte) { rand.Read(t[:]); return }

func rtpPacket(seq uint16, ts, ssrc uint32) []byte {
	b := make([]byte, 12+160)
	b[0], b[1] = 0x80, 0 // PCMU
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[4:], ts)
	binary.BigEndian.PutUint32(b[8:], ssrc)
	for i := 12; i < len(b); i++ {
		b[i] = 0xff
	}
	return b
}

// client: Binding, Allocate (401 then long-term credentials, RFC 8489
// §9.2), SIP INVITE announcing the relayed address, ChannelBind to the
// peer, ICE checks and RTP through the channel, BYE, Refresh lifetime 0.
func client() {
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:40000")))
	if err != nil {
		log.Fatal(err)
	}
	srv := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(turnServer))
	var w stun.Builder
	var m stun.Message
	buf := make([]byte, 2048)
	roundtrip := func(b []byte) *stun.Message {
		for try := 0; try < 3; try++ {
			c.WriteToUDP(b, srv)
			c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			n, _, err := c.ReadFromUDP(buf)
			if err == nil && stun.Parse(buf[:n], &m) == nil {
				return &m
			}
		}
		log.Fatal("no answer from the TURN server")
		return nil
	}
	// an unanswered Binding to a server that is not there
	dead := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("198.51.100.9:3478"))
	for i := 0; i < 2; i++ {
		c.WriteToUDP(w.Begin(stun.ClassRequest, stun.MethodBinding, [12]byte{9, 9, 9}).End(true), dead)
	}
	roundtrip(w.Begin(stun.ClassRequest, stun.MethodBinding, txid()).End(true))
	log.Printf("mapped %s", m.XORMapped)
	roundtrip(w.Begin(stun.ClassRequest, stun.MethodAllocate, txid()).U32(stun.AttrRequestedTransport, 17<<24).End(true))
	var realm, nonce []byte
	rest := buf[stun.HeaderLen : stun.HeaderLen+m.Length]
	for len(rest) >= 4 {
		t, l := binary.BigEndian.Uint16(rest), int(binary.BigEndian.Uint16(rest[2:]))
		v := append([]byte(nil), rest[4:4+l]...)
		if t == stun.AttrRealm {
			realm = v
		}
		if t == stun.AttrNonce {
			nonce = v
		}
		rest = rest[4+(l+3)&^3:]
	}
	sum := md5.Sum([]byte(user + ":" + string(realm) + ":" + pass))
	auth := func(w *stun.Builder) []byte {
		w.Attr(stun.AttrUsername, []byte(user)).Attr(stun.AttrRealm, realm).Attr(stun.AttrNonce, nonce)
		b := w.Attr(stun.AttrMessageIntegrity, make([]byte, 20)).End(false)
		h := hmac.New(sha1.New, sum[:])
		h.Write(b[:len(b)-24])
		copy(b[len(b)-20:], h.Sum(nil))
		return w.End(true)
	}
	roundtrip(auth(w.Begin(stun.ClassRequest, stun.MethodAllocate, txid()).U32(stun.AttrRequestedTransport, 17<<24)))
	if m.Class != stun.ClassSuccess {
		log.Fatalf("allocate: %d", m.ErrorCode)
	}
	relayed := m.XORRelayed
	log.Printf("relayed %s", relayed)

	// SIP straight to the peer (through the NAT), SDP naming the relay
	sipc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.2:5060")))
	if err != nil {
		log.Fatal(err)
	}
	psip := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(peerSIP))
	sdp := fmt.Sprintf("v=0\r\no=- 1 1 IN IP4 10.0.0.2\r\ns=-\r\nc=IN IP4 %s\r\nt=0 0\r\nm=audio %d RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"+
		"a=candidate:1 1 UDP 2130706431 10.0.0.2 40000 typ host\r\na=candidate:2 1 UDP 16777215 %s %d typ relay raddr 10.0.0.2 rport 40000\r\n",
		relayed.Addr(), relayed.Port(), relayed.Addr(), relayed.Port())
	callID := "turn-relayed-call@10.0.0.2"
	req := func(method string, cseq int, body string) string {
		ct := ""
		if body != "" {
			ct = "Content-Type: application/sdp\r\n"
		}
		return fmt.Sprintf("%s sip:bob@198.51.100.2 SIP/2.0\r\nVia: SIP/2.0/UDP 10.0.0.2:5060;branch=z9hG4bK-%s-%d;rport\r\n"+
			"Max-Forwards: 70\r\nFrom: <sip:alice@example.org>;tag=a1\r\nTo: <sip:bob@198.51.100.2>%s\r\nCall-ID: %s\r\nCSeq: %d %s\r\n"+
			"Contact: <sip:alice@10.0.0.2:5060>\r\n%sContent-Length: %d\r\n\r\n%s",
			method, strings.ToLower(method), cseq, map[bool]string{true: ";tag=b1"}[method != "INVITE"], callID, cseq, method, ct, len(body), body)
	}
	sipc.WriteToUDP([]byte(req("INVITE", 1, sdp)), psip)
	sipc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, _, err := sipc.ReadFromUDP(buf); err != nil {
		log.Fatal("no 200 OK: ", err)
	}
	sipc.WriteToUDP([]byte(strings.Replace(req("ACK", 1, ""), "CSeq: 1 ACK", "CSeq: 1 ACK", 1)), psip)

	roundtrip(auth(w.Begin(stun.ClassRequest, stun.MethodChannelBind, txid()).
		U32(stun.AttrChannelNumber, 0x4000<<16).Address(stun.AttrXORPeerAddress, netip.MustParseAddrPort(peerRTP), true)))
	// ICE: a nominating check through the relay (RFC 8445 §7.2.4)
	check := w.Begin(stun.ClassRequest, stun.MethodBinding, txid()).Attr(stun.AttrUsername, []byte("peer:alice")).
		U32(stun.AttrPriority, 16777215).U64(stun.AttrICEControlling, 0x1122334455667788).Attr(stun.AttrUseCandidate, nil).End(true)
	c.WriteToUDP(stun.AppendChannelData(nil, 0x4000, check, false), srv)
	for i := 0; i < packets; i++ {
		c.WriteToUDP(stun.AppendChannelData(nil, 0x4000, rtpPacket(uint16(1000+i), uint32(160*i), 0xa11ce), false), srv)
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	sipc.WriteToUDP([]byte(req("BYE", 2, "")), psip)
	sipc.SetReadDeadline(time.Now().Add(2 * time.Second))
	sipc.ReadFromUDP(buf)
	c.SetReadDeadline(time.Time{})
	// drain what the relay still delivers, then release the allocation
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	for {
		if _, _, err := c.ReadFromUDP(buf); err != nil {
			break
		}
	}
	roundtrip(auth(w.Begin(stun.ClassRequest, stun.MethodRefresh, txid()).U32(stun.AttrLifetime, 0)))
}

// peer: answers the INVITE, answers ICE checks, and sends RTP to the
// relayed address the offer named.
func peer() {
	sipc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(peerSIP)))
	if err != nil {
		log.Fatal(err)
	}
	rtpc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(peerRTP)))
	if err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, 4096)
	sipc.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, from, err := sipc.ReadFromUDP(buf)
	if err != nil {
		log.Fatal(err)
	}
	invite := string(buf[:n])
	var relayed netip.AddrPort
	var addr string
	for _, l := range strings.Split(invite, "\r\n") {
		if strings.HasPrefix(l, "c=IN IP4 ") {
			addr = strings.TrimPrefix(l, "c=IN IP4 ")
		}
		if strings.HasPrefix(l, "m=audio ") {
			var port int
			fmt.Sscanf(l, "m=audio %d", &port)
			relayed = netip.MustParseAddrPort(fmt.Sprintf("%s:%d", addr, port))
		}
	}
	hdr := func(name string) string {
		for _, l := range strings.Split(invite, "\r\n") {
			if strings.HasPrefix(l, name+":") {
				return l
			}
		}
		return ""
	}
	sdp := "v=0\r\no=- 2 2 IN IP4 198.51.100.2\r\ns=-\r\nc=IN IP4 198.51.100.2\r\nt=0 0\r\nm=audio 4000 RTP/AVP 0\r\na=rtpmap:0 PCMU/8000\r\n"
	ok := fmt.Sprintf("SIP/2.0 200 OK\r\n%s\r\n%s\r\n%s;tag=b1\r\n%s\r\n%s\r\nContact: <sip:bob@198.51.100.2:5060>\r\nContent-Type: application/sdp\r\nContent-Length: %d\r\n\r\n%s",
		hdr("Via"), hdr("From"), hdr("To"), hdr("Call-ID"), hdr("CSeq"), len(sdp), sdp)
	sipc.WriteToUDP([]byte(ok), from)
	go func() { // answer ICE checks
		var m stun.Message
		var w stun.Builder
		rb := make([]byte, 2048)
		rtpc.SetReadDeadline(time.Now().Add(6 * time.Second))
		for {
			n, src, err := rtpc.ReadFromUDPAddrPort(rb)
			if err != nil {
				return
			}
			if stun.Parse(rb[:n], &m) == nil && m.Class == stun.ClassRequest {
				rtpc.WriteToUDPAddrPort(w.Begin(stun.ClassSuccess, stun.MethodBinding, m.TxID).Address(stun.AttrXORMappedAddress, src, true).End(true), src)
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // the ChannelBind installs the permission first
	for i := 0; i < packets; i++ {
		rtpc.WriteToUDPAddrPort(rtpPacket(uint16(2000+i), uint32(160*i), 0xb0b), relayed)
		time.Sleep(20 * time.Millisecond)
	}
	sipc.SetReadDeadline(time.Now().Add(3 * time.Second))
	for {
		n, from, err := sipc.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if strings.HasPrefix(string(buf[:n]), "BYE ") {
			invite = string(buf[:n])
			sipc.WriteToUDP([]byte(fmt.Sprintf("SIP/2.0 200 OK\r\n%s\r\n%s\r\n%s\r\n%s\r\n%s\r\nContent-Length: 0\r\n\r\n",
				hdr("Via"), hdr("From"), hdr("To"), hdr("Call-ID"), hdr("CSeq"))), from)
			return
		}
	}
}
