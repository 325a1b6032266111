package handlestore

import (
	"bytes"
	"encoding/json"
)

// jsonText is v as compact JSON, with <, > and & as they are (as the other
// clients write them).
func jsonText(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, codecError("the value is not JSON: %v", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// jsonValue decodes a stored JSON value into dst.
func jsonValue(raw []byte, dst any) error {
	if err := json.Unmarshal(raw, dst); err != nil {
		return codecError("the stored value is not JSON: %v", err)
	}
	return nil
}
