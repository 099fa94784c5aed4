package com.acme.app;

import com.acme.core.*;

public class Main {
    public static void main(String[] args) {
        Shape s = new Circle(2.0);
        Circle c = new Circle(1.0);
        System.out.println(c.show());
        run(s);
    }

    static void run(Shape s) {
        System.out.println(Util.square(s.area()));
    }
}
