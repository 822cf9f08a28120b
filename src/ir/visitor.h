// src/ir/visitor.h — dispatch on a statement's kind, generated from statements.def.
//
// A visitor derives from StmtVisitor<Derived, Result> and defines one
// visit_<Kind>(Stmt*) per statement kind; visit(s) calls the right one. The
// dispatch is a switch without a default, built from the statement list, so
// a kind added to statements.def fails to compile in every visitor that
// does not handle it. Passes that treat a family of kinds alike ask for the
// kind's category (ir.h: is_tree_access(...), kind_category(...)) instead
// of listing kinds behind a default label.
#pragma once

#include "ir/ir.h"

namespace grove::ir {

template <typename Derived, typename Result = void, typename StmtPtr = Stmt*>
class StmtVisitor {
 public:
  Result visit(StmtPtr s) {
    Derived& self = static_cast<Derived&>(*this);
    switch (s->kind()) {
#define GROVE_STMT(Kind, mnemonic, operands, blocks, category) \
  case StmtKind::Kind:                                          \
    return self.visit_##Kind(s);
#include "ir/statements.def"
    }
    return self.visit_unknown(s);
  }

  // Only reached for a corrupted kind (the switch covers every one).
  Result visit_unknown(StmtPtr) { return Result(); }
};

// The same over const statements.
template <typename Derived, typename Result = void>
using ConstStmtVisitor = StmtVisitor<Derived, Result, const Stmt*>;

}  // namespace grove::ir
