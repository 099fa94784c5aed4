import { Theme } from './theme';

/** Fixes colors. */
export abstract class Fixer<T> extends Base<T> implements IFixer, Other {
    abstract fix(x: T): void;
    private handler = (e: Event) => { this.fix(e as any); };
    constructor() { super(); }
}

interface IFixer extends Runnable {
    fix(x: number): void;
}

namespace Utils.Color {
    export function parse<T>(s: string): T { return cache.get(s); }
}

enum Mode { A, B }
export const apply = async (theme: Theme): Promise<void> => { await Utils.Color.parse(theme); };
