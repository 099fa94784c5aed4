// The TypeScript checker as an oracle of JavaScript calls (scripts/js_call_edges.py --ts-oracle):
// prints "file\tline\tcallee text\tdeclaration file\tdeclaration line\tkind" for each call or `new`
// as the TypeScript checker (allowJs/checkJs) resolves it.
const ts = require('typescript');
const path = require('path');
const root = process.argv[2];
const files = process.argv.slice(3).map(f => path.join(root, f));
const program = ts.createProgram(files, {allowJs: true, checkJs: true, noEmit: true, target: ts.ScriptTarget.ES2020,
  module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10, maxNodeModuleJsDepth: 0});
const checker = program.getTypeChecker();
for (const f of files) {
  const sf = program.getSourceFile(f);
  const visit = (node) => {
    if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
      const line = sf.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      let decl = null;
      try {
        const sig = checker.getResolvedSignature(node);
        decl = sig && sig.declaration;
        if (!decl) {
          let sym = checker.getSymbolAtLocation(ts.isCallExpression(node) ? node.expression : node.expression);
          if (sym && (sym.flags & ts.SymbolFlags.Alias)) sym = checker.getAliasedSymbol(sym);
          decl = sym && sym.valueDeclaration;
        }
      } catch (e) { decl = null; }
      // a value's declaration (a parameter, a variable) is no definition: only functions count
      if (decl && decl.parent && ts.isBinaryExpression(decl.parent) && decl === decl.parent.right) decl = decl.parent;
      if (decl && (ts.isPropertyAccessExpression(decl) || ts.isElementAccessExpression(decl)) && ts.isBinaryExpression(decl.parent)) decl = decl.parent;
      const ok = decl && (ts.isFunctionDeclaration(decl) || ts.isFunctionExpression(decl) || ts.isArrowFunction(decl)
        || ts.isMethodDeclaration(decl) || ts.isClassDeclaration(decl) || ts.isConstructorDeclaration(decl)
        || (ts.isBinaryExpression(decl) && decl.right && (ts.isFunctionExpression(decl.right) || ts.isArrowFunction(decl.right) || ts.isBinaryExpression(decl.right)))
        || (ts.isPropertyAssignment(decl) && decl.initializer && (ts.isFunctionExpression(decl.initializer) || ts.isArrowFunction(decl.initializer))));
      if (ok && decl.getSourceFile) {
        const df = decl.getSourceFile();
        const dline = df.getLineAndCharacterOfPosition(decl.getStart()).line + 1;
        console.log([path.relative(root, f), line, node.expression.getText().replace(/\s+/g, ' ').slice(0, 60),
                     path.relative(root, df.fileName), dline, ts.SyntaxKind[decl.kind]].join('\t'));
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}
