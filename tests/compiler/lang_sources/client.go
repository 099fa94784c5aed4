// Package x does things.
package x

import (
	"fmt"
	f "os"
)

// Client talks.
// Two lines.
type Client struct {
	io.Reader
	*Base
	name string
}

type (
	// A is an int.
	A int
	I interface {
		io.Closer
		Do(x int) error
	}
)

// Get gets.
func (c *Client[T]) Get(k string) error {
	fmt.Println(k)
	return c.do(k)
}

func helper() { inner := func() {}; inner() }
func (Client) Get() {}
