//go:build !unix

package wrap

type owner struct{}

func ownerOf(string) owner { return owner{} }

func (owner) apply(string) {}
