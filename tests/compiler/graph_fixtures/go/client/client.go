package client

import (
	"fmt"

	u "example.com/shop/internal/util"
)

// Doer does things.
type Doer interface {
	Do() error
}

// Base holds shared state.
type Base struct {
	u.Logger
}

func (b *Base) Reset() {}

// Client talks to the shop.
type Client struct {
	Base
	name string
}

func NewClient(name string) *Client {
	c := &Client{name: u.Trim(name)}
	c.Reset()
	return c
}

func (c *Client) Do() error {
	c.prepare()
	c.Log("do")
	fmt.Println(c.name)
	return nil
}

func (c *Client) prepare() {
	c.Reset()
}
