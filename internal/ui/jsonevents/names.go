package jsonevents

// Each event's "event" name, which the encoder writes: an event's type
// says what it is, so no one building one can name it wrongly.

func (*Start) Name() Name         { return NameStart }
func (*ManyStart) Name() Name     { return NameStart }
func (*ReadStart) Name() Name     { return NameStart }
func (*BenchStart) Name() Name    { return NameStart }
func (*CheckStart) Name() Name    { return NameStart }
func (*Device) Name() Name        { return NameDevice }
func (*PhaseEvent) Name() Name    { return NamePhase }
func (*Progress) Name() Name      { return NameProgress }
func (*CardProgress) Name() Name  { return NameCardProgress }
func (*Note) Name() Name          { return NameNote }
func (*BlockMap) Name() Name      { return NameBlockMap }
func (*Card) Name() Name          { return NameCard }
func (*BenchPoint) Name() Name    { return NamePoint }
func (*BenchRestored) Name() Name { return NameRestored }
func (*Summary) Name() Name       { return NameSummary }
func (*ManySummary) Name() Name   { return NameSummary }
func (*ReadSummary) Name() Name   { return NameSummary }
func (*BenchSummary) Name() Name  { return NameSummary }
func (*CheckSummary) Name() Name  { return NameSummary }
func (*Error) Name() Name         { return NameError }
