package export

import "github.com/rpctap/rpctap/internal/redact"

func redactWith(keys ...string) *redact.Redactor { return redact.New(redact.Options{Keys: keys}) }
