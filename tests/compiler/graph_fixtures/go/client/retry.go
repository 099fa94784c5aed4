package client

func Retry(n int) error {
	c := NewClient("retry")
	var err error
	for i := 0; i < n; i++ {
		err = c.Do()
	}
	return err
}
