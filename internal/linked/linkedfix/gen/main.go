package main

import (
	"fmt"
	"os"

	"github.com/rpctap/rpctap/internal/linked/linkedfix"
)

func main() {
	_, err := linkedfix.Write(os.Args[1], linkedfix.Options{CutFiles: len(os.Args) > 2})
	fmt.Println(err)
}
