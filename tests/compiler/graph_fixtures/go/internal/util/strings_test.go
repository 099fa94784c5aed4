package util

func helperForTests() string { return Trim(" x ") }
