package com.acme.app;

import com.acme.core.Base;
import com.acme.core.Util;
import static com.acme.core.Util.square;

public class Circle extends Base {
    private final double r;

    public Circle(double r) {
        this.r = r;
    }

    @Override
    public double area() {
        return 3.14 * square(r);
    }

    public String show() {
        return this.describe() + Util.round(r);
    }
}
