// How many threads a job on rnngraph's own workers may use right now. On a machine whose
// cores other processes keep busy, the OS deschedules team members, and a member that holds
// an item stalls its phase for a time slice (milliseconds): a smaller team, down to the
// caller alone, then finishes sooner. Each job reports the time its members spent off their
// cores (Job::lost_us); when the jobs of the last kTeamWindowUs lost kTeamLostUs, jobs get
// half the team, and half again while that goes on; every kTeamRestUs without it gives one
// halving back (tuning.hpp).
#pragma once

namespace rnngraph::runtime {

// The team a job that asks for `team` threads gets now (1 .. team).
int capped_team(int team);
// After each job on rnngraph's own workers: the microseconds its members were descheduled.
void record_team_job(long long lost_us);

// (rnngraph/threads.hpp: team_cap and set_team_cap read and switch it, for measurements.)

}  // namespace rnngraph::runtime
