package handlestore

import (
	"encoding/json"

	pb "github.com/handlestore/handlestore/client/go/gen/handlestore/v1"
)

// Value is a state-tool value: a JSON document or bytes. The zero Value is
// "none" (an entry listed without values).
type Value struct {
	json    []byte
	bytes   []byte
	isBytes bool
}

// JSONValue is v as a JSON document.
func JSONValue(v any) (Value, error) {
	raw, err := jsonText(v)
	if err != nil {
		return Value{}, err
	}
	return Value{json: raw}, nil
}

// BytesValue is b stored as bytes.
func BytesValue(b []byte) Value {
	return Value{bytes: append([]byte{}, b...), isBytes: true}
}

// valueOf: a Value as it is, []byte as bytes, anything else as JSON.
func valueOf(v any) (Value, error) {
	switch x := v.(type) {
	case Value:
		return x, nil
	case []byte:
		return BytesValue(x), nil
	case json.RawMessage:
		return Value{json: append([]byte{}, x...)}, nil
	}
	return JSONValue(v)
}

// IsZero: no value (a list without values).
func (v Value) IsZero() bool { return v.json == nil && !v.isBytes }

// IsBytes: stored as bytes rather than JSON.
func (v Value) IsBytes() bool { return v.isBytes }

// Bytes is a bytes value (nil for JSON).
func (v Value) Bytes() []byte { return v.bytes }

// JSON is a JSON value's text (nil for bytes).
func (v Value) JSON() json.RawMessage { return v.json }

// Decode decodes a JSON value into dst (a bytes value into a *[]byte).
func (v Value) Decode(dst any) error {
	if v.isBytes {
		if p, ok := dst.(*[]byte); ok {
			*p = append([]byte{}, v.bytes...)
			return nil
		}
		return codecError("the value is bytes, not JSON")
	}
	if v.json == nil {
		return codecError("no value")
	}
	return jsonValue(v.json, dst)
}

func (v Value) wire() *pb.StateValue {
	if v.isBytes {
		return &pb.StateValue{Kind: &pb.StateValue_Bytes{Bytes: v.bytes}}
	}
	return &pb.StateValue{Kind: &pb.StateValue_Json{Json: string(v.json)}}
}

func valueFromWire(w *pb.StateValue) Value {
	switch k := w.GetKind().(type) {
	case *pb.StateValue_Bytes:
		return Value{bytes: k.Bytes, isBytes: true}
	case *pb.StateValue_Json:
		return Value{json: []byte(k.Json)}
	}
	return Value{}
}
