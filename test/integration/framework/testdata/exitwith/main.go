// Command exitwith prints its arguments and exits with the status given as the first
// one. The framework's tests build it to check BuildGoBinary.
package main

import (
	"fmt"
	"os"
	"strconv"
)

func main() {
	fmt.Println(os.Args[1:])
	code, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(code)
}
