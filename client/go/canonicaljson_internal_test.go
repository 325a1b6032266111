package handlestore

import (
	"testing"
	"time"
)

func TestCanonicalJSONIsWhatSerdeJSONWrites(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{map[string]any{"b": 1, "a": map[string]any{"d": 2, "c": 3}}, `{"a":{"c":3,"d":2},"b":1}`},
		{struct {
			Z string `json:"z"`
			A bool   `json:"a"`
		}{"<&>\u2028é\n\x01", true}, `{"a":true,"z":"<&>` + "\u2028" + `é\n\u0001"}`},
		{[]any{0.1, 1e21, 100.0, 1.5e-7, 123456.789, -2.5, 1e16, 0.00001}, `[0.1,1e21,100,1.5e-7,123456.789,-2.5,10000000000000000,0.00001]`},
		{map[string]any{"é": 1, "z": 2, "Z": 3}, `{"Z":3,"z":2,"é":1}`},
		{nil, `null`},
	}
	for _, c := range cases {
		got, err := canonicalJSON(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("canonicalJSON(%#v) = %s (%v); want %s", c.in, got, err, c.want)
		}
	}
}

func TestFloatsInRyuLayout(t *testing.T) {
	for f, want := range map[float64]string{
		0.1: "0.1", 1e21: "1e21", 100: "100.0", 1.5e-7: "1.5e-7", 1e16: "1e16", 1.2345e17: "1.2345e17",
		0.00001: "0.00001", 0.000001: "1e-6", -2.5: "-2.5", 123456.789: "123456.789", 1e15: "1000000000000000.0",
	} {
		if got := ryuLayout(f); got != want {
			t.Errorf("ryuLayout(%v) = %s; want %s", f, got, want)
		}
	}
}

func TestCanonicalJSONRefusesWhatIsNotJSON(t *testing.T) {
	if _, err := canonicalJSON(make(chan int)); err == nil {
		t.Fatal("a channel is not JSON")
	}
}

func TestTTLMillisFollowsTheHandleStoreRule(t *testing.T) {
	cases := map[time.Duration]int64{
		0: 0, -1: -1, -time.Hour: -1, time.Nanosecond: 1, time.Millisecond: 1,
		1500 * time.Microsecond: 2, time.Hour: 3_600_000,
	}
	for ttl, want := range cases {
		if got := ttlMillis(ttl); got != want {
			t.Errorf("ttlMillis(%v) = %d; want %d", ttl, got, want)
		}
	}
	if defaultTTLMillis(-time.Second) != 0 || defaultTTLMillis(time.Second) != 1000 {
		t.Error("a default TTL below zero is never, 0 on the wire")
	}
}
