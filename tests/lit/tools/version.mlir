// RUN: pase-opt --version | filecheck %s
// RUN: pase-opt -v | filecheck %s

// CHECK: {{^}}pase-opt (xdsl {{[0-9]+\.[0-9]+\.[0-9]+}}){{$}}
// CHECK-NOT: {{.}}
