// Absurd device counts are one error each, at once: pase-partition-stages{devices=2^40}
// listed the divisors of 2^40 one by one for `stages=auto` (a hang) before any check.
// RUN: not pase-opt %S/Inputs/tiny-loss.dnn -p 'pase-partition-stages{devices=1099511627776}' 2>&1 | filecheck %s --check-prefix=STAGES
// RUN: not pase-opt %S/Inputs/tiny-loss.dnn -p 'pase-partition-stages{devices=8193 stages=1}' 2>&1 | filecheck %s --check-prefix=LIMIT
// RUN: not pase-opt %S/Inputs/tiny-loss.dnn -p 'pase-search{devices=1099511627776}' 2>&1 | filecheck %s --check-prefix=SEARCH
// RUN: not pase-opt %S/Inputs/tiny-loss.dnn -p 'pase-annotate-configs{devices=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not pase-opt %S/Inputs/tiny-loss.dnn -p 'pase-annotate-configs{devices=100000}' 2>&1 | filecheck %s --check-prefix=MANY
// RUN: not pase-opt %S/Inputs/tiny-loss.dnn -p 'pase-partition-stages{devices=8 stages=2 data-parallel=8}' 2>&1 | filecheck %s --check-prefix=STAGE-DP
// RUN: not pase-opt %S/Inputs/tiny-loss.dnn -p 'pase-partition-stages{devices=8 stages=2 data-parallel=3}' 2>&1 | filecheck %s --check-prefix=DP
// RUN: pase-opt %S/Inputs/tiny-loss.dnn -p 'pase-partition-stages{devices=7}' | filecheck %s --check-prefix=PRIME
// RUN: pase-opt %S/Inputs/tiny-loss.dnn -p 'pase-search{devices=1}' | filecheck %s --check-prefix=ONE

// STAGES:      {{^}}error: pase-partition-stages: devices must be between 1 and 8,192, got 1,099,511,627,776{{$}}
// STAGES-NOT:  {{.}}
// LIMIT:       {{^}}error: pase-partition-stages: devices must be between 1 and 8,192, got 8,193{{$}}
// LIMIT-NOT:   {{.}}
// SEARCH:      {{^}}error: pase-search on @tiny: devices must be between 1 and 8,192, got 1,099,511,627,776{{$}}
// SEARCH-NOT:  {{.}}
// ZERO:        {{^}}error: pase-annotate-configs: devices must be between 1 and 8,192, got 0{{$}}
// ZERO-NOT:    {{.}}
// MANY:        {{^}}error: pase-annotate-configs: devices must be between 1 and 8,192, got 100,000{{$}}
// MANY-NOT:    {{.}}
// A data-parallel degree that divides the devices but not the devices of a stage: the
// error names the stage's devices.
// STAGE-DP:    {{^}}error: pase-partition-stages: data-parallel=8 does not divide the 4 devices of a stage (8 devices / stages=2){{$}}
// STAGE-DP-NOT: {{.}}
// DP:          {{^}}error: pase-partition-stages: data-parallel=3 does not divide the 4 devices of a stage (8 devices / stages=2){{$}}
// DP-NOT:      {{.}}

// Seven devices: a prime count is a plan like any other (b = 8 splits 1 way or not at all
// over 7; the stages are 1 or 7).
// PRIME:       pase.pipeline = #pase.pipeline<devices = 7, {{.*}} stages = {{[17]}},
// ONE:         pase.strategy = #pase.strategy<devices = 1,
