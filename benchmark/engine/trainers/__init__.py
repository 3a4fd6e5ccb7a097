"""The trainers: each trains one round's chosen clients (base.Trainer) and lives in its own module,
one per `execution:` value; `auto` is composed of the other two. by_execution.trainer_for picks a
job's."""
