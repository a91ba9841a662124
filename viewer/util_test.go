package viewer

import "fmt"

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }
