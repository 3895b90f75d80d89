package repro

import (
	"github.com/sipnab/sipnab/core/dialog"
)

// extract reads what the UAC side of the call did.
func extract(det *dialog.Detail) (*flow, error) {
	leg := 0
	for i, l := range det.Legs {
		if l.Method == "INVITE" {
			leg = i
			break
		}
	}
	var msgs []*dialog.Message
	for i := range det.Messages {
		m := &det.Messages[i]
		if m.Msg != nil && !m.Retransmission && m.Leg == leg {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 0 {
		return nil, inputErr("the call holds no retained message to replay")
	}
	open := msgs[0]
	if !open.Msg.IsRequest {
		return nil, inputErr("the capture begins with a response (%d): the request that opened the call was not captured, so there is nothing to replay", open.Msg.StatusCode)
	}
	switch open.Msg.Method {
	case "ACK", "BYE", "CANCEL", "PRACK":
		return nil, inputErr("the capture begins mid-call with a %s: the request that opened the call was not captured", open.Msg.Method)
	}
	f := &flow{uac: open.Src, method: open.Msg.Method}
	toUAC := false
	for _, m := range msgs {
		if !m.Msg.IsRequest && m.Dst == f.uac {
			toUAC = true
			break
		}
	}
	var cur *attempt
	answered := false
	failed := false
	for _, m := range msgs {
		r := m.Msg
		if r.IsRequest {
			fromUAC := m.Src == f.uac
			switch {
			case r.Method == f.method && r.To.Tag == "":
				if !fromUAC || (cur != nil && r.CSeq.Number == cur.req.Msg.CSeq.Number) {
					continue // another hop of the same attempt
				}
				if cur != nil && (cur.final == nil || !challenge(cur.final.Msg.StatusCode)) {
					return f, nil // a new call under the same Call-ID: the replay stops here
				}
				if len(f.attempts) == MaxAttempts {
					return f, nil
				}
				cur = &attempt{req: m}
				f.attempts = append(f.attempts, cur)
			case cur == nil:
			case r.Method == "CANCEL" && fromUAC && r.CSeq.Number == cur.req.Msg.CSeq.Number:
				if cur.cancel == nil {
					cur.cancel = m
				}
			case r.Method == "ACK" && fromUAC && r.CSeq.Number == cur.req.Msg.CSeq.Number:
				if cur.ack == nil {
					cur.ack = m
				}
			case r.Method == "BYE":
				switch {
				case answered && f.bye == nil:
					f.bye, f.byeUAC = m, fromUAC
				case failed:
					f.lateBye = true
				}
			default:
				if r.To.Tag != "" {
					f.inDialog++
				}
			}
			continue
		}
		if cur == nil || (toUAC && m.Dst != f.uac) {
			continue
		}
		code := r.StatusCode
		switch {
		case r.CSeq.Method == f.method && r.CSeq.Number == cur.req.Msg.CSeq.Number:
			switch {
			case cur.final != nil:
			case code < 200:
				cur.prov = appendCode(cur.prov, code)
				if cur.cancel == nil {
					cur.provAt = m.TS
				}
			default:
				cur.final = m
				if code < 300 {
					answered = true
					f.answered = m.TS
				} else if !challenge(code) {
					failed = true
				}
			}
		case r.CSeq.Method == "CANCEL" && cur.cancel != nil && r.CSeq.Number == cur.cancel.Msg.CSeq.Number:
			cur.cancelTo = appendCode(cur.cancelTo, code)
		case r.CSeq.Method == "BYE" && f.bye != nil && r.CSeq.Number == f.bye.Msg.CSeq.Number && code >= 200 && f.byeResp == 0:
			f.byeResp = code
		}
	}
	return f, nil
}

func challenge(code int) bool { return code == 401 || code == 407 }

func appendCode(l []int, c int) []int {
	for _, x := range l {
		if x == c {
			return l
		}
	}
	return append(l, c)
}
