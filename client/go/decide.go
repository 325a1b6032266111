package handlestore

import (
	"strings"

	"google.golang.org/grpc/codes"
)

// decision is what the client does with a failed call, a write's or read's
// failure inside a Submit, or a watch stream that failed or would not open:
// the one rule of proto/vectors/retry.json.
type decision struct {
	// retry: try the call again on another node after a backoff (a write
	// with the same write id, so it applies once).
	retry bool
	// resume: open the watch again on another node from its position.
	resume bool
	// tls: TLS refused the connection; giving up as UNAUTHENTICATED
	// ("TLS: ...") says why, where a retry could only end in a deadline.
	tls bool
}

// decide applies the rule. A reason this build knows is the node's word
// and decides whatever the message says (a leader_unreachable may quote a
// peer's TLS error). A reason from a newer node leaves it to the code. A
// status without a reason was made up by grpc-go or a proxy: its text is
// checked for a TLS refusal first, then a lost node, connection or stream
// (UNKNOWN and INTERNAL included, a reset stream's codes) is tried again.
// The caller's own cancel or deadline is checked before, never here.
func decide(s rpcStatus) decision {
	reason := Reason(s.detail.GetReason())
	if reason.Known() {
		r := reason.Retry()
		return decision{retry: r == RetryYes, resume: r != RetryNo}
	}
	if reason == "" && tlsRefused(s.message) {
		return decision{tls: true}
	}
	again := lostNode(s.code) || (reason == "" && (s.code == codes.Unknown || s.code == codes.Internal))
	return decision{retry: again, resume: again}
}

// lostNode: the codes of a node, connection or stream lost, whoever said so.
func lostNode(c codes.Code) bool {
	switch c {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Aborted, codes.Canceled:
		return true
	}
	return false
}

// tlsRefused: the text names a TLS judgement (a certificate rejected, a
// TLS alert, TLS spoken to a plain port), by proto/wire.txt's markers. A
// handshake that merely broke off (a node restarting) is not one: it heals.
// grpc-go flattens its typed TLS errors into the status text, so the text
// is all there is.
func tlsRefused(message string) bool {
	text := strings.ToLower(message)
	for _, m := range wireTlsRefusedMarkers {
		if strings.Contains(text, m) {
			return true
		}
	}
	return false
}

// tlsError is the error of a connection TLS refused: UNAUTHENTICATED, the
// library's text after "TLS: ", where names the node.
func (s rpcStatus) tlsError(where string) *Error {
	return &Error{Reason: ReasonUnauthenticated, Code: codes.Unauthenticated, Message: where + "TLS: " + s.message}
}
