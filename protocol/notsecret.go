package protocol

import "github.com/rpctap/rpctap/internal/redact"

// NotSecreter is implemented by a protocol whose spec defines members that
// redaction's rules would take for secrets by their key ("token") but that
// are something else, such as a correlation id. The recorder hands a
// session's list to the redactor once it knows the protocol, so a cassette
// of a session that carries no secret gives back every byte of it. Each
// protocol declares its list in its own file.
type NotSecreter interface {
	NotSecret() []redact.Field
}

// NotSecret returns the not-secret fields of the protocol p (nil when it
// declares none).
func NotSecret(p Protocol) []redact.Field {
	if n, ok := p.(NotSecreter); ok {
		return n.NotSecret()
	}
	return nil
}
