"""What `fedbench plan` computes beside the job list: the time budget and the client splits."""
