package com.acme.core;

public final class Util {
    public static String round(double v) {
        return String.valueOf(Math.round(v));
    }

    public static double square(double v) {
        return v * v;
    }
}
