package com.acme.core;

/** A shape. */
public interface Shape {
    double area();
}
