package mcpevents

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Pending says when a stream is complete: once it has a response to every
// request its liveness record names or, with none named, once it has any
// response. A message answers a request when it is a JSON-RPC response
// (an object with a string or number id, exactly one of result and error,
// no method) whose id equals the request's, type and all (1 and "1"
// differ). Not safe for concurrent use.
type Pending struct {
	requests []json.RawMessage
	// open: the keys of the requests not yet answered.
	open     map[string]bool
	complete bool
}

// NewPending is a stream that answers requests (their ids as sent); none:
// the first response completes it.
func NewPending(requests []json.RawMessage) *Pending {
	p := &Pending{open: map[string]bool{}}
	for _, r := range requests {
		if k, ok := idKey(r); ok && !p.open[k] {
			p.open[k] = true
			p.requests = append(p.requests, r)
		}
	}
	return p
}

// Requests are the ids the stream answers, as recorded (nil: none).
func (p *Pending) Requests() []json.RawMessage { return p.requests }

// Complete says whether every request has its response.
func (p *Pending) Complete() bool { return p.complete }

// Completes says whether msg would complete the stream, without recording
// it.
func (p *Pending) Completes(msg []byte) bool {
	if p.complete {
		return false
	}
	k, ok := responseTo(msg)
	if !ok {
		return false
	}
	if len(p.requests) == 0 {
		return true
	}
	return p.open[k] && len(p.open) == 1
}

// Add records msg (nil: a priming event) and says whether the stream is
// complete.
func (p *Pending) Add(msg []byte) bool {
	if p.complete {
		return true
	}
	k, ok := responseTo(msg)
	if !ok {
		return false
	}
	if len(p.requests) == 0 {
		p.complete = true
		return true
	}
	delete(p.open, k)
	p.complete = len(p.open) == 0
	return p.complete
}

// Unanswered are the requests without a response, in recorded order.
func (p *Pending) Unanswered() []json.RawMessage {
	var out []json.RawMessage
	for _, r := range p.requests {
		if k, _ := idKey(r); p.open[k] {
			out = append(out, r)
		}
	}
	return out
}

// responseTo is the key of the id msg answers, if msg is a response.
func responseTo(msg []byte) (string, bool) {
	var m map[string]json.RawMessage
	if len(msg) == 0 || json.Unmarshal(msg, &m) != nil || m == nil {
		return "", false
	}
	if _, ok := m["method"]; ok {
		return "", false
	}
	_, result := m["result"]
	_, failed := m["error"]
	if result == failed {
		return "", false
	}
	return idKey(m["id"])
}

// idKey is a JSON-RPC id (a string or a number) as a key that keeps its
// type: "s:" and the string, or "n:" and the number; false for anything
// else (null, absent, an object).
func idKey(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s:" + s, true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var n json.Number
		if json.Unmarshal(raw, &n) != nil {
			return "", false
		}
		if i, err := n.Int64(); err == nil {
			return "n:" + strconv.FormatInt(i, 10), true
		}
		f, err := n.Float64()
		if err != nil {
			return "", false
		}
		return "n:" + strconv.FormatFloat(f, 'g', -1, 64), true
	}
	return "", false
}

// RequestIDs are the ids of the requests in a POST body (one message or a
// batch), as sent: the messages with a method and a string or number id.
func RequestIDs(body []byte) []json.RawMessage {
	body = bytes.TrimSpace(body)
	var msgs []json.RawMessage
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &msgs) != nil {
			return nil
		}
	} else {
		msgs = []json.RawMessage{body}
	}
	var ids []json.RawMessage
	for _, raw := range msgs {
		var m struct {
			Method *string          `json:"method"`
			ID     *json.RawMessage `json:"id"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Method == nil || m.ID == nil {
			continue
		}
		if _, ok := idKey(*m.ID); ok {
			ids = append(ids, bytes.TrimSpace(*m.ID))
		}
	}
	return ids
}
