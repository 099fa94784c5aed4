package com.acme.core;

public abstract class Base implements Shape {
    protected String name;

    public String describe() {
        return name + format(area());
    }

    protected static String format(double v) {
        return Util.round(v);
    }
}
