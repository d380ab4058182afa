! f2py interface: built-in model lookup and every query of a model at given states.
! Plain arrays in and out; every model argument block is
!   model_id, ipar, rpar, usercb, n, mh, mn, mflags
! (see fortran/models/registry.f90: setup_model).

!> Id of the built-in model called `name` (-1 if unknown) and its sizes for ipar/rpar.
subroutine model_lookup(name, ipar, nipar, rpar, nrpar, model_id, n, mh, mn, const_mass, has_energy, ierr)
  use pyint_kinds
  use pyint_registry, only: builtin_info, model_lookup_id
  implicit none
  character(len=*), intent(in) :: name
  integer(c_int), intent(in) :: nipar, nrpar
  integer(c_int), intent(in) :: ipar(nipar)
  real(c_double), intent(in) :: rpar(nrpar)
  integer(c_int), intent(out) :: model_id, n, mh, mn, const_mass, has_energy, ierr
  model_id = model_lookup_id(name)
  call builtin_info(model_id, ipar, rpar, n, mh, mn, const_mass, has_energy, ierr)
end subroutine model_lookup

!> What `what` (a QUERY_* code of fortran/queries.f90) is of the model at the states packed in x;
!> iarg: the query's integer arguments; out: the packed result; ierr: 0 ok, 3 bad model/sizes,
!> else the query's status.  The Python side: pyint/models/_fortran_model.py: model_query.
subroutine model_query(what, model_id, ipar, nipar, rpar, nrpar, usercb, n, mh, mn, mflags, niarg, iarg, &
                       nx, x, nout, out, ierr)
  use pyint_kinds
  use pyint_model, only: model_t
  use pyint_registry, only: setup_model
  use pyint_queries, only: query => model_query
  implicit none
  integer(c_int), intent(in) :: what, model_id, nipar, nrpar, n, mh, mn, niarg, nx, nout
  integer(c_int), intent(in) :: ipar(nipar), mflags(3), iarg(niarg)
  real(c_double), intent(in) :: rpar(nrpar), x(nx)
  real(c_double), intent(out) :: out(nout)
  integer(c_int), intent(out) :: ierr
  include 'usercb_interface.inc'
  class(model_t), allocatable :: m
  integer :: e
  out = 0
  call setup_model(model_id, ipar, rpar, usercb, n, mh, mn, mflags, m, e)
  ierr = STATUS_BAD_INPUT
  if (e /= 0) return
  call query(what, m, iarg, x, out, e)
  ierr = e
end subroutine model_query
